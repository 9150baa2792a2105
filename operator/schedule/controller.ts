/**
 * The ToolSchedule controller's wiring: ToolSchedules and Tools informers, a work queue, and the wake-ups
 * decide() asks for (the next tick, a poll while runs of the schedule run) on the schedule clock. A
 * schedule is looked at when it changes, when its tool is added, changed (archived) or deleted, at its
 * wake-ups and at each resync. Each reconcile reads the world (the tool from the cache, the key the
 * schedule runs as, the newest tick claim and the running runs from the store), decides (reconcile.ts)
 * and acts (execute.ts).
 */
import type { Tool } from '../../contract/api/tool.ts';
import { ScheduleEventReason } from '../../contract/reasons.ts';
import {
  resourceNameForId,
  scheduleIdOf,
  toolFromResource,
  toolIdOf,
} from '../../contract/resources/convert.ts';
import type { ToolResource, ToolScheduleResource } from '../../contract/resources/kinds.ts';
import { Informer } from '../../kube/informer.ts';
import type { ResourceClient } from '../../kube/resources/index.ts';
import type { WorkQueue } from '../../kube/work-queue.ts';
import { type JobFailure, JobSupervisor } from '../../platform/supervisor.ts';
import { keyNow } from '../../runs/run-as.ts';
import { runAsNow } from '../../runs/scheduled.ts';
import { type ScheduleClock, SYSTEM_CLOCK } from '../../schedules/clock.ts';
import { compileSchedule } from '../../schedules/cron.ts';
import { scheduleHold } from '../../schedules/holds.ts';
import type { Store } from '../../store/index.ts';
import type { EventRecorder } from '../events.ts';
import type { ControllerHealth } from '../health.ts';
import { informerOptions } from '../informer-options.ts';
import { reconcileQueue } from '../reconcile-queue.ts';
import { executeSchedule, type ScheduledRunStarter } from './execute.ts';
import { decideSchedule } from './reconcile.ts';

export interface ScheduleControllerOptions {
  toolSchedules: ResourceClient<ToolScheduleResource>;
  tools: ResourceClient<ToolResource>;
  /** Tick claims, the runs of ticks, and the API keys schedules run as (looked at before every tick). */
  store: Pick<Store, 'scheduleTicks' | 'getRun' | 'findApiKeyById'>;
  runs: ScheduledRunStarter;
  events: EventRecorder;
  /** Runs each reconcile as a background job: failures logged, counted, retried with backoff. */
  jobs?: JobSupervisor;
  /** Who claims ticks: distinct per process (replicas racing for a tick tell themselves apart by it). */
  identity: string;
  clock?: ScheduleClock;
  resyncMs?: number;
  log?: (line: string) => void;
}

export class ScheduleController {
  readonly #opts: ScheduleControllerOptions;
  readonly #clock: ScheduleClock;
  readonly #schedules: Informer<ToolScheduleResource>;
  readonly #tools: Informer<ToolResource>;
  readonly #queue: WorkQueue;
  readonly #jobs: JobSupervisor;
  /** Failed reconciles in a row per schedule (since this process started; each tick is a new chance). */
  readonly #failures = new Map<string, number>();
  /** The pending wake-up of each schedule (one at a time: the latest decision's). */
  readonly #wakeups = new Map<string, () => void>();
  #stopped = false;

  constructor(opts: ScheduleControllerOptions) {
    this.#opts = opts;
    this.#clock = opts.clock ?? SYSTEM_CLOCK;
    this.#jobs = opts.jobs ?? new JobSupervisor({ log: opts.log ?? (() => {}) });
    const informers = informerOptions(opts);
    this.#schedules = new Informer(opts.toolSchedules, { kind: 'ToolSchedule', ...informers });
    // Tools only matter as present, absent or archived; the Tool controller resyncs Tools.
    this.#tools = new Informer(opts.tools, { kind: 'Tool', ...informers, resyncMs: 0 });
    this.#queue = reconcileQueue('toolschedule', (name) => this.#reconcile(name), opts.log);
  }

  async start(): Promise<void> {
    this.#schedules.on('change', (name) => this.#queue.add(name));
    this.#schedules.onEvent((type, schedule) => {
      if (type === 'DELETED') void this.#forget(schedule);
    });
    this.#tools.onEvent((_type, tool) => this.#toolChanged(toolIdOf(tool)));
    await this.#tools.start();
    await this.#schedules.start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const cancel of this.#wakeups.values()) cancel();
    this.#wakeups.clear();
    await this.#queue.shutdown();
    await Promise.all([this.#schedules.stop(), this.#tools.stop()]);
  }

  /** Resolves when no reconcile is queued or running (tests). */
  idle(): Promise<void> {
    return this.#queue.idle();
  }

  health(): ControllerHealth {
    return { informers: [this.#schedules], queues: { toolschedule: this.#queue } };
  }

  #toolChanged(toolId: string): void {
    for (const schedule of this.#schedules.values()) {
      if (schedule.spec.toolId === toolId) this.#queue.add(schedule.metadata.name);
    }
  }

  async #forget(schedule: ToolScheduleResource): Promise<void> {
    const name = schedule.metadata.name;
    this.#wakeups.get(name)?.();
    this.#wakeups.delete(name);
    try {
      await this.#opts.store.scheduleTicks.forget(schedule.metadata.uid ?? name);
    } catch (error) {
      this.#opts.log?.(`toolschedule ${name}: dropping its tick claims failed: ${(error as Error).message}`);
    }
  }

  /** The tool as the cache has it; undefined when it does not exist. */
  #tool(toolId: string): Tool | undefined {
    const tool = this.#tools.get(resourceNameForId(toolId));
    if (!tool || toolIdOf(tool) !== toolId) return undefined;
    return toolFromResource(tool);
  }

  #wakeAt(name: string, when: Date): void {
    this.#wakeups.get(name)?.();
    this.#wakeups.set(
      name,
      this.#clock.at(when, () => {
        this.#wakeups.delete(name);
        this.#queue.add(name);
      }),
    );
  }

  /**
   * One reconcile as an attempt of the `schedule` job (platform/supervisor.ts): a failure (the store or the
   * API server unreachable, a run that could not be started) is logged redacted, counted in the job metrics,
   * shown as a ReconcileFailed Event, and retried with backoff; given up after KUBEGLUE_JOB_MAX_FAILURES,
   * until the schedule's next tick.
   */
  async #reconcile(name: string): Promise<void> {
    if (this.#stopped) return;
    const schedule = this.#schedules.get(name);
    if (!schedule) return;
    const result = await this.#jobs.attempt({
      job: 'schedule',
      subject: `ToolSchedule ${name}`,
      failuresBefore: this.#failures.get(name) ?? 0,
      run: () => this.#reconcileNow(schedule),
      record: (failure) => this.#recordFailure(schedule, failure),
    });
    if (result.ok) this.#failures.delete(name);
  }

  async #recordFailure(schedule: ToolScheduleResource, failure: JobFailure): Promise<void> {
    const name = schedule.metadata.name;
    if (failure.terminal) {
      this.#failures.delete(name);
      const compiled = compileSchedule(
        schedule.spec.schedule,
        schedule.spec.timeZone ?? 'UTC',
        this.#clock.now(),
      );
      const next = compiled.ok ? compiled.schedule.next(this.#clock.now()) : undefined;
      if (next) this.#wakeAt(name, next);
    } else {
      this.#failures.set(name, failure.failures);
      this.#queue.addAfter(name, Math.max(0, (failure.retryAt?.getTime() ?? Date.now()) - Date.now()));
    }
    await this.#opts.events.record(schedule, ScheduleEventReason.ReconcileFailed, failure.message);
  }

  async #reconcileNow(schedule: ToolScheduleResource): Promise<void> {
    const name = schedule.metadata.name;
    const { store } = this.#opts;
    const lastClaim = await store.scheduleTicks.latest(schedule.metadata.uid ?? name);
    const lastRun = lastClaim?.runId ? await store.getRun(lastClaim.runId) : undefined;
    // The key it runs as, as it is now: a revoked key's schedule starts nothing more (schedules/holds.ts).
    const key = await keyNow(store, schedule.spec.runAs?.userId);
    const decision = decideSchedule({
      now: this.#clock.now(),
      schedule,
      hold: scheduleHold(schedule.spec, this.#tool(schedule.spec.toolId), key),
      lastClaim,
      lastRunStatus: lastClaim?.runId ? (lastRun?.status ?? null) : undefined,
      running: await store.scheduleTicks.runningRuns(schedule.spec.toolId, scheduleIdOf(schedule)),
    });
    const { lost } = await executeSchedule(schedule, decision, {
      store,
      runs: this.#opts.runs,
      toolSchedules: this.#opts.toolSchedules,
      informer: this.#schedules,
      events: this.#opts.events,
      identity: this.#opts.identity,
      now: () => this.#clock.now(),
      runAs: runAsNow(schedule.spec.runAs, key),
      ...(this.#opts.log ? { log: this.#opts.log } : {}),
    });
    // Another process acted on the tick first: decide again from what it did.
    if (lost) this.#queue.add(name);
    else if (decision.requeueAt) this.#wakeAt(name, decision.requeueAt);
    else {
      this.#wakeups.get(name)?.();
      this.#wakeups.delete(name);
    }
  }
}
