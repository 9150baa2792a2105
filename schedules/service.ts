/**
 * schedules/: tool schedules — which ticks a cron expression has in a time zone (cron.ts, DST included),
 * which tick is due and what the concurrency policy says (ticks.ts), the names of their states
 * (reasons.ts), the clock (clock.ts), and the ScheduleService: schedules as ToolSchedule resources,
 * written and read through REST the way superglue's clients call them. Tick claims are in the store
 * (store/queries/schedule-ticks.ts); the operator's reconciler (operator/schedule/) acts on ticks.
 *
 * May import: contract, config, engine, kube, store.
 */
import { randomUUID } from 'node:crypto';
import {
  KG_ERR_SCHEDULE_CHANGED_CONCURRENTLY,
  KG_ERR_SCHEDULE_EXISTS,
  KG_ERR_SCHEDULE_INVALID,
  KG_ERR_SCHEDULE_NOT_FOUND,
  KG_ERR_VALIDATION,
} from '../contract/api/errors.ts';
import type {
  ScheduleRunAs,
  ToolSchedule,
  ToolScheduleCreateBody,
  ToolScheduleUpdateBody,
} from '../contract/api/schedule.ts';
import { apiInstant, resourceTimes } from '../contract/resources/convert.ts';
import type { ToolScheduleResource, ToolScheduleSpec } from '../contract/resources/kinds.ts';
import { UPDATED_AT_ANNOTATION } from '../contract/resources/labels.ts';
import { API_VERSION } from '../contract/resources/meta.ts';
import type { Informer } from '../kube/informer.ts';
import { isResourceError, type KubeglueResources } from '../kube/resources/index.ts';
import { compileSchedule } from './cron.ts';
import { ScheduleConditionType, ScheduleReason } from './reasons.ts';

/** Whether a schedule's tool can run: what pauses a schedule (operator/schedule/ and the REST view). */
export type ToolState = 'ready' | 'archived' | 'missing';

export interface ScheduleServiceDeps {
  resources: Pick<KubeglueResources, 'toolSchedules'>;
  informer: Informer<ToolScheduleResource>;
  namespace: string;
  /** The state of a tool now (the REST view shows a schedule of an archived tool as paused at once). */
  toolState: (toolId: string) => Promise<ToolState>;
  now?: () => Date;
}

export interface ScheduleListQuery {
  toolId?: string | undefined;
  page: number;
  limit: number;
  /** The tools the key may see; null: every tool. */
  toolIds: readonly string[] | null;
}

const UPDATE_ATTEMPTS = 3;

/** The state a schedule is in, and why: the operator's Ready condition and the REST view say the same. */
export function scheduleState(
  spec: Pick<ToolScheduleSpec, 'schedule' | 'timeZone' | 'suspend'>,
  tool: ToolState,
  now: Date,
): { state: ToolSchedule['status']; reason: ScheduleReason; message: string } {
  const compiled = compileSchedule(spec.schedule, spec.timeZone ?? 'UTC', now);
  if (!compiled.ok)
    return { state: 'invalid', reason: ScheduleReason.InvalidSchedule, message: compiled.problem };
  if (spec.suspend) {
    return {
      state: 'disabled',
      reason: ScheduleReason.Suspended,
      message: 'The schedule is suspended: no tick starts a run',
    };
  }
  if (tool === 'archived') {
    return {
      state: 'paused',
      reason: ScheduleReason.ToolArchived,
      message: 'The tool is archived: no tick starts a run until it is unarchived',
    };
  }
  if (tool === 'missing') {
    return {
      state: 'paused',
      reason: ScheduleReason.ToolNotFound,
      message: 'The tool does not exist: no tick starts a run until it is created again',
    };
  }
  return { state: 'active', reason: ScheduleReason.Scheduled, message: 'Each tick starts a run' };
}

/** The schedule as the REST API answers. `tool`: the tool's state now (else the operator's last word). */
export function scheduleView(resource: ToolScheduleResource, now: Date, tool?: ToolState): ToolSchedule {
  const { spec, metadata, status } = resource;
  const timeZone = spec.timeZone ?? 'UTC';
  const compiled = compileSchedule(spec.schedule, timeZone, now);
  const ready = status?.conditions?.find((c) => c.type === ScheduleConditionType.Ready);
  const lastSeen: ToolState =
    ready?.reason === ScheduleReason.ToolArchived
      ? 'archived'
      : ready?.reason === ScheduleReason.ToolNotFound
        ? 'missing'
        : 'ready';
  const state = scheduleState(spec, tool ?? lastSeen, now);
  const times = resourceTimes(metadata);
  // Before the API server answered the create (never in an answer): now.
  const createdAt = times.createdAt ?? now.toISOString();
  const lastRunAt = apiInstant(status?.lastScheduleTime);
  const lastTickAt = apiInstant(status?.lastTick?.time);
  const next = compiled.ok ? compiled.schedule.next(now) : undefined;
  return {
    id: metadata.name,
    toolId: spec.toolId,
    cronExpression: spec.schedule,
    timezone: timeZone,
    enabled: !spec.suspend,
    payload: spec.inputs ?? {},
    options: spec.options ?? {},
    ...(spec.runAs?.userId ? { createdByUserId: spec.runAs.userId } : {}),
    ...(lastRunAt ? { lastRunAt } : {}),
    nextRunAt: next ? next.toISOString() : null,
    createdAt,
    updatedAt: times.updatedAt ?? createdAt,
    concurrencyPolicy: spec.concurrencyPolicy ?? 'Allow',
    startingDeadlineSeconds: spec.startingDeadlineSeconds ?? null,
    status: state.state,
    // Before the operator's first look, an active schedule says so rather than claiming it was checked.
    statusReason: state.state === 'active' && ready === undefined ? ScheduleReason.Pending : state.reason,
    statusMessage: state.message,
    activeRunIds: status?.active ?? [],
    ...(status?.lastRunId ? { lastRunId: status.lastRunId } : {}),
    ...(status?.lastTick && lastTickAt
      ? {
          lastTick: {
            at: lastTickAt,
            outcome: status.lastTick.outcome.toLowerCase() as 'started' | 'skipped' | 'missed',
            ...(status.lastTick.reason ? { reason: status.lastTick.reason } : {}),
          },
        }
      : {}),
  };
}

/** Schedules as the REST API sees them, stored as ToolSchedule resources (what kubectl sees too). */
export class ScheduleService {
  readonly #deps: ScheduleServiceDeps;

  constructor(deps: ScheduleServiceDeps) {
    this.#deps = deps;
  }

  #now(): Date {
    return this.#deps.now?.() ?? new Date();
  }

  async #view(resource: ToolScheduleResource): Promise<ToolSchedule> {
    return scheduleView(resource, this.#now(), await this.#deps.toolState(resource.spec.toolId));
  }

  /** Oldest first (by creation), then by id: new schedules come last, so pages stay put. */
  async list(query: ScheduleListQuery) {
    const all = this.#deps.informer
      .values()
      .filter((s) => query.toolId === undefined || s.spec.toolId === query.toolId)
      .filter((s) => query.toolIds === null || query.toolIds.includes(s.spec.toolId))
      .sort((a, b) => {
        const byTime = (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '');
        return byTime !== 0 ? byTime : a.metadata.name.localeCompare(b.metadata.name);
      });
    const start = (query.page - 1) * query.limit;
    const page = all.slice(start, start + query.limit);
    return {
      data: await Promise.all(page.map((s) => this.#view(s))),
      page: query.page,
      limit: query.limit,
      total: all.length,
      hasMore: start + page.length < all.length,
    };
  }

  /** The next `count` ticks of an expression from now, or KG_ERR_SCHEDULE_INVALID as a write would say. */
  nextRuns(expression: string, timeZone: string, count: number): { expression: string; ticks: Date[] } {
    const compiled = compileSchedule(expression, timeZone, this.#now());
    if (!compiled.ok) throw KG_ERR_SCHEDULE_INVALID(compiled.problem);
    const ticks: Date[] = [];
    for (let tick = compiled.schedule.next(this.#now()); tick && ticks.length < count; ) {
      ticks.push(tick);
      tick = compiled.schedule.next(tick);
    }
    return { expression: compiled.schedule.expression, ticks };
  }

  /** The schedule, when it is one of the tool's (else 404 as for a missing one). */
  async #find(toolId: string, scheduleId: string): Promise<ToolScheduleResource> {
    const resource =
      this.#deps.informer.get(scheduleId) ?? (await this.#deps.resources.toolSchedules.get(scheduleId));
    if (!resource || resource.spec.toolId !== toolId) throw KG_ERR_SCHEDULE_NOT_FOUND(toolId, scheduleId);
    return resource;
  }

  async get(toolId: string, scheduleId: string): Promise<ToolSchedule> {
    return this.#view(await this.#find(toolId, scheduleId));
  }

  /** `runAs`: the key writing it, whose rights the scheduled runs carry. */
  async create(toolId: string, body: ToolScheduleCreateBody, runAs: ScheduleRunAs): Promise<ToolSchedule> {
    const spec = this.#spec({
      toolId,
      schedule: body.cronExpression,
      timeZone: body.timezone ?? 'UTC',
      ...(body.payload !== undefined ? { inputs: body.payload } : {}),
      ...(body.options !== undefined ? { options: body.options } : {}),
      suspend: body.enabled === false,
      concurrencyPolicy: body.concurrencyPolicy ?? 'Allow',
      ...(typeof body.startingDeadlineSeconds === 'number'
        ? { startingDeadlineSeconds: body.startingDeadlineSeconds }
        : {}),
      runAs,
    });
    const name = body.id ?? randomUUID();
    try {
      const created = await this.#deps.resources.toolSchedules.create({
        apiVersion: API_VERSION,
        kind: 'ToolSchedule',
        metadata: {
          name,
          namespace: this.#deps.namespace,
          annotations: { [UPDATED_AT_ANNOTATION]: this.#now().toISOString() },
        },
        spec,
      });
      this.#deps.informer.observe('ADDED', created);
      return this.#view(created);
    } catch (error) {
      if (isResourceError(error, 'AlreadyExists')) throw KG_ERR_SCHEDULE_EXISTS(name);
      if (isResourceError(error, 'Conflict')) throw KG_ERR_SCHEDULE_CHANGED_CONCURRENTLY(name);
      throw error;
    }
  }

  /** Changes what the body gives; the schedule then runs as `runAs`, the key that changed it. */
  async update(
    toolId: string,
    scheduleId: string,
    body: ToolScheduleUpdateBody,
    runAs: ScheduleRunAs,
  ): Promise<ToolSchedule> {
    if (body.toolId !== undefined && body.toolId !== toolId)
      throw KG_ERR_VALIDATION('schedule update', `toolId: must equal the tool of the path ('${toolId}')`);
    if (body.id !== undefined && body.id !== scheduleId)
      throw KG_ERR_VALIDATION('schedule update', `id: must equal the schedule of the path ('${scheduleId}')`);
    for (let attempt = 1; ; attempt++) {
      const existing = await this.#find(toolId, scheduleId);
      const current = existing.spec;
      const deadline =
        body.startingDeadlineSeconds === undefined
          ? current.startingDeadlineSeconds
          : (body.startingDeadlineSeconds ?? undefined);
      const { startingDeadlineSeconds: _d, ...kept } = current;
      const spec = this.#spec({
        ...kept,
        ...(body.cronExpression !== undefined ? { schedule: body.cronExpression } : {}),
        ...(body.timezone !== undefined ? { timeZone: body.timezone } : {}),
        ...(body.payload !== undefined ? { inputs: body.payload } : {}),
        ...(body.options !== undefined ? { options: body.options } : {}),
        ...(body.enabled !== undefined ? { suspend: !body.enabled } : {}),
        ...(body.concurrencyPolicy !== undefined ? { concurrencyPolicy: body.concurrencyPolicy } : {}),
        ...(deadline !== undefined ? { startingDeadlineSeconds: deadline } : {}),
        runAs,
      });
      const { status: _status, ...object } = existing;
      try {
        const updated = await this.#deps.resources.toolSchedules.update({
          ...object,
          metadata: {
            ...existing.metadata,
            annotations: {
              ...existing.metadata.annotations,
              [UPDATED_AT_ANNOTATION]: this.#now().toISOString(),
            },
          },
          spec,
        });
        this.#deps.informer.observe('MODIFIED', updated);
        return this.#view(updated);
      } catch (error) {
        // Another write (the operator's status, another client) came in between: apply ours to theirs.
        if (isResourceError(error, 'Conflict') && attempt < UPDATE_ATTEMPTS) continue;
        if (isResourceError(error, 'Conflict')) throw KG_ERR_SCHEDULE_CHANGED_CONCURRENTLY(scheduleId);
        if (isResourceError(error, 'NotFound')) throw KG_ERR_SCHEDULE_NOT_FOUND(toolId, scheduleId);
        throw error;
      }
    }
  }

  async delete(toolId: string, scheduleId: string): Promise<void> {
    const existing = await this.#find(toolId, scheduleId);
    try {
      await this.#deps.resources.toolSchedules.delete(existing.metadata.name);
      this.#deps.informer.observe('DELETED', existing);
    } catch (error) {
      if (isResourceError(error, 'NotFound')) throw KG_ERR_SCHEDULE_NOT_FOUND(toolId, scheduleId);
      throw error;
    }
  }

  /** The spec, refused when its expression cannot be evaluated (the resource's schema checks only its shape). */
  #spec(spec: ToolScheduleSpec): ToolScheduleSpec {
    const compiled = compileSchedule(spec.schedule, spec.timeZone ?? 'UTC', this.#now());
    if (!compiled.ok) throw KG_ERR_SCHEDULE_INVALID(compiled.problem);
    return spec;
  }
}
