/**
 * schedules/: tool schedules — which ticks a cron expression has in a time zone (cron.ts, DST included),
 * which tick is due and what the concurrency policy says (ticks.ts), what holds an enabled schedule back (holds.ts: its tool, its payload, the key it runs as),
 * the clock (clock.ts), and the ScheduleService: schedules as ToolSchedule resources, written and read
 * through REST the way superglue's clients call them. Tick claims are in the store
 * (store/queries/schedule-ticks.ts); the operator's reconciler (operator/schedule/) acts on ticks. The
 * names of their states and of what ticks did are reasons, declared in contract/reasons.ts.
 *
 * May import: contract, config, engine, kube, store, platform, runs.
 */
import { randomUUID } from 'node:crypto';
import { SETTINGS, type Settings } from '../config/config.ts';
import {
  KG_ERR_SCHEDULE_CHANGED_CONCURRENTLY,
  KG_ERR_SCHEDULE_EXISTS,
  KG_ERR_SCHEDULE_INVALID,
  KG_ERR_SCHEDULE_LIMIT,
  KG_ERR_SCHEDULE_NOT_FOUND,
  KG_ERR_SCHEDULE_PAYLOAD_TOO_LARGE,
  KG_ERR_VALIDATION,
} from '../contract/api/errors.ts';
import type {
  ScheduleRunAs,
  ToolSchedule,
  ToolScheduleCreateBody,
  ToolScheduleUpdateBody,
} from '../contract/api/schedule.ts';
import type { Tool } from '../contract/api/tool.ts';
import { ScheduleConditionType, ScheduleReason, ScheduleStatusReason } from '../contract/reasons.ts';
import {
  apiInstant,
  resourceTimes,
  scheduleIdOf,
  scheduleResourceName,
} from '../contract/resources/convert.ts';
import type { ToolScheduleResource, ToolScheduleSpec } from '../contract/resources/kinds.ts';
import { UPDATED_AT_ANNOTATION } from '../contract/resources/labels.ts';
import { API_VERSION } from '../contract/resources/meta.ts';
import type { Informer } from '../kube/informer.ts';
import { isResourceError, type KubeglueResources } from '../kube/resources/index.ts';
import { KeyedLock } from '../platform/keyed-lock.ts';
import { assertInputsMatchSchema } from '../runs/input-schema.ts';
import type { KeyNow } from '../runs/run-as.ts';
import { compileSchedule } from './cron.ts';
import { type ScheduleHold, scheduleHold } from './holds.ts';

/** KUBEGLUE_MAX_SCHEDULES_PER_TOOL, KUBEGLUE_MAX_SCHEDULES_PER_KEY, KUBEGLUE_MAX_SCHEDULE_PAYLOAD_BYTES. */
export type ScheduleLimits = Settings<'api'>['schedules'];

export interface ScheduleServiceDeps {
  resources: Pick<KubeglueResources, 'toolSchedules'>;
  informer: Informer<ToolScheduleResource>;
  namespace: string;
  /** The tool now, undefined when it does not exist (a schedule of an archived tool shows paused at once). */
  tool: (toolId: string) => Promise<Tool | undefined>;
  /** The API key a schedule runs as, now (a revoked key's schedules show paused at once). */
  keyNow: (userId: string | undefined) => Promise<KeyNow>;
  /** The schedules' runs running now, from the run records (activeRunIds). */
  runningRuns: (
    schedules: ReadonlyArray<{ toolId: string; scheduleId: string }>,
  ) => Promise<Array<{ toolId: string; scheduleId: string; runId: string }>>;
  limits: ScheduleLimits;
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
  hold: ScheduleHold | undefined,
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
  if (hold) return { state: 'paused', ...hold };
  return { state: 'active', reason: ScheduleReason.Scheduled, message: 'Each tick starts a run' };
}

/**
 * The schedule as the REST API answers. `hold`: what holds it back now; `activeRunIds`: its runs running
 * now (the status' `active` is as the operator last saw it, up to ACTIVE_POLL_MS behind).
 */
export function scheduleView(
  resource: ToolScheduleResource,
  now: Date,
  hold: ScheduleHold | undefined,
  activeRunIds: string[],
): ToolSchedule {
  const { spec, metadata, status } = resource;
  const timeZone = spec.timeZone ?? 'UTC';
  const compiled = compileSchedule(spec.schedule, timeZone, now);
  const ready = status?.conditions?.find((c) => c.type === ScheduleConditionType.Ready);
  const state = scheduleState(spec, hold, now);
  const times = resourceTimes(metadata);
  // Before the API server answered the create (never in an answer): now.
  const createdAt = times.createdAt ?? now.toISOString();
  const lastRunAt = apiInstant(status?.lastScheduleTime);
  const lastTickAt = apiInstant(status?.lastTick?.time);
  const next = compiled.ok ? compiled.schedule.next(now) : undefined;
  return {
    id: scheduleIdOf(resource),
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
    statusReason:
      state.state === 'active' && ready === undefined ? ScheduleStatusReason.Pending : state.reason,
    statusMessage: state.message,
    activeRunIds,
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

const LIMITS = SETTINGS.tree.schedules;

/** One call per argument: the lookups of a list page, shared by its schedules. */
function memo<T>(fn: (arg: string) => Promise<T>): (arg: string) => Promise<T> {
  const seen = new Map<string, Promise<T>>();
  return (arg) => {
    let found = seen.get(arg);
    if (!found) {
      found = fn(arg);
      seen.set(arg, found);
    }
    return found;
  };
}

/** Schedules as the REST API sees them, stored as ToolSchedule resources (what kubectl sees too). */
export class ScheduleService {
  readonly #deps: ScheduleServiceDeps;
  /** Counting and creating go one at a time in this process, so concurrent writes cannot pass a limit. */
  readonly #writes = new KeyedLock();

  constructor(deps: ScheduleServiceDeps) {
    this.#deps = deps;
  }

  #now(): Date {
    return this.#deps.now?.() ?? new Date();
  }

  /** The REST views of schedules: what holds each back and its running runs, looked up once per list. */
  async #views(resources: readonly ToolScheduleResource[]): Promise<ToolSchedule[]> {
    const toolOf = memo((id: string) => this.#deps.tool(id));
    const keyOf = memo((id: string) => this.#deps.keyNow(id || undefined));
    const running = await this.#deps.runningRuns(
      resources.map((r) => ({ toolId: r.spec.toolId, scheduleId: scheduleIdOf(r) })),
    );
    const now = this.#now();
    return Promise.all(
      resources.map(async (resource) => {
        const { spec } = resource;
        const id = scheduleIdOf(resource);
        const hold = scheduleHold(spec, await toolOf(spec.toolId), await keyOf(spec.runAs?.userId ?? ''));
        const active = running
          .filter((r) => r.toolId === spec.toolId && r.scheduleId === id)
          .map((r) => r.runId);
        return scheduleView(resource, now, hold, active);
      }),
    );
  }

  async #view(resource: ToolScheduleResource): Promise<ToolSchedule> {
    const [view] = await this.#views([resource]);
    return view as ToolSchedule;
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
      data: await this.#views(page),
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

  /**
   * The tool's schedule with this id, or undefined. Ids are unique per tool: a schedule of another tool
   * with the same id is not this one. Looked up by the names the id can have (chosen by the request: the
   * derived name; chosen by the server, or written before ids were per tool: the id), then among every
   * schedule (kubectl's, whose spec.id names it).
   */
  async #lookup(toolId: string, scheduleId: string): Promise<ToolScheduleResource | undefined> {
    const isIt = (r: ToolScheduleResource | undefined): r is ToolScheduleResource =>
      r !== undefined && r.spec.toolId === toolId && scheduleIdOf(r) === scheduleId;
    for (const name of new Set([scheduleResourceName(toolId, scheduleId), scheduleId])) {
      const resource = this.#deps.informer.get(name) ?? (await this.#deps.resources.toolSchedules.get(name));
      if (isIt(resource)) return resource;
    }
    return this.#deps.informer.values().find(isIt);
  }

  /** The schedule, when it is one of the tool's (else 404 as for a missing one). */
  async #find(toolId: string, scheduleId: string): Promise<ToolScheduleResource> {
    const resource = await this.#lookup(toolId, scheduleId);
    if (!resource) throw KG_ERR_SCHEDULE_NOT_FOUND(toolId, scheduleId);
    return resource;
  }

  async get(toolId: string, scheduleId: string): Promise<ToolSchedule> {
    return this.#view(await this.#find(toolId, scheduleId));
  }

  /** `runAs`: the key writing it, whose rights the scheduled runs carry. */
  async create(toolId: string, body: ToolScheduleCreateBody, runAs: ScheduleRunAs): Promise<ToolSchedule> {
    this.#assertPayloadSize(body.payload);
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
    await this.#assertInputs(spec, body.payload !== undefined);
    // A server-chosen id is a new UUID, unique by itself; one the request chose is unique per tool, its
    // name derived from both (so two creates of it at once meet at one name: one gets AlreadyExists).
    const id = body.id;
    const name = id === undefined ? randomUUID() : scheduleResourceName(toolId, id);
    const created = await this.#writes.run('create', async () => {
      if (id !== undefined && (await this.#lookup(toolId, id))) throw KG_ERR_SCHEDULE_EXISTS(id);
      this.#assertWithinLimits(toolId, runAs.userId);
      try {
        const resource = await this.#deps.resources.toolSchedules.create({
          apiVersion: API_VERSION,
          kind: 'ToolSchedule',
          metadata: {
            name,
            namespace: this.#deps.namespace,
            annotations: { [UPDATED_AT_ANNOTATION]: this.#now().toISOString() },
          },
          spec: id === undefined ? spec : { id, ...spec },
        });
        this.#deps.informer.observe('ADDED', resource);
        return resource;
      } catch (error) {
        if (isResourceError(error, 'AlreadyExists')) throw KG_ERR_SCHEDULE_EXISTS(id ?? name);
        if (isResourceError(error, 'Conflict')) throw KG_ERR_SCHEDULE_CHANGED_CONCURRENTLY(id ?? name);
        throw error;
      }
    });
    return this.#view(created);
  }

  /**
   * Refuses a new schedule of the tool, or one more for the key, past KUBEGLUE_MAX_SCHEDULES_PER_TOOL or
   * KUBEGLUE_MAX_SCHEDULES_PER_KEY (counted from the informer: every schedule, kubectl's too).
   */
  #assertWithinLimits(toolId: string | undefined, userId: string | undefined): void {
    const { maxPerTool, maxPerKey } = this.#deps.limits;
    const all = this.#deps.informer.values();
    if (toolId !== undefined && all.filter((s) => s.spec.toolId === toolId).length >= maxPerTool)
      throw KG_ERR_SCHEDULE_LIMIT(`Tool '${toolId}'`, maxPerTool, LIMITS.maxPerTool.name);
    if (userId !== undefined && all.filter((s) => s.spec.runAs?.userId === userId).length >= maxPerKey)
      throw KG_ERR_SCHEDULE_LIMIT(`API key '${userId}'`, maxPerKey, LIMITS.maxPerKey.name);
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
    this.#assertPayloadSize(body.payload);
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
      await this.#assertInputs(spec, body.payload !== undefined);
      // A key taking a schedule over (its runs carry this key's rights from now on) counts it as its own.
      if (current.runAs?.userId !== runAs.userId) this.#assertWithinLimits(undefined, runAs.userId);
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

  /**
   * A schedule saved enabled must have a payload its tool's inputSchema accepts (absent: `{}`), whatever the
   * body left out, so it cannot fail at every tick; a payload given is checked either way. A missing tool is
   * the route's to refuse (a deleted tool's schedules can still be disabled, changed and deleted).
   */
  async #assertInputs(spec: ToolScheduleSpec, payloadGiven: boolean): Promise<void> {
    if (spec.suspend && !payloadGiven) return;
    const tool = await this.#deps.tool(spec.toolId);
    if (tool) assertInputsMatchSchema(tool, spec.inputs ?? {});
  }

  /** A payload given larger than KUBEGLUE_MAX_SCHEDULE_PAYLOAD_BYTES is refused (one kept is left alone). */
  #assertPayloadSize(payload: ToolScheduleCreateBody['payload']): void {
    if (payload === undefined) return;
    const bytes = Buffer.byteLength(JSON.stringify(payload));
    const limit = this.#deps.limits.maxPayloadBytes;
    if (bytes > limit) throw KG_ERR_SCHEDULE_PAYLOAD_TOO_LARGE(bytes, limit, LIMITS.maxPayloadBytes.name);
  }
}
