import { performance } from 'node:perf_hooks';
import { sleep } from '../platform/backoff.ts';
import { isResourceError, type ResourceClient } from './resources/index.ts';
import { type Lease, type LeaseSpec, microTime } from './types.ts';

export interface LeaderElectionOptions {
  leases: ResourceClient<Lease>;
  /** The Lease's name, one per elected role (e.g. kubeglue-operator). */
  name: string;
  /** Unique per candidate (e.g. the Pod name plus a random suffix). */
  identity: string;
  /** How long a leader's claim lasts without renewal, as other candidates judge it (default 15 s). */
  leaseDurationMs?: number;
  /** A leader that could not renew for this long stops leading (default 10 s; less than leaseDurationMs). */
  renewDeadlineMs?: number;
  /** Time between tries to acquire or renew (default 2 s). */
  retryPeriodMs?: number;
  /** Became leader: signal aborts when leadership ends (lost or released). */
  onStartedLeading?: (signal: AbortSignal) => void;
  /** Leadership ended: lost (the operator exits), or released by stop(). */
  onStoppedLeading?: (reason: 'lost' | 'released') => void;
  /** Someone (maybe us) was seen holding the lease for the first time. */
  onNewLeader?: (identity: string) => void;
  log?: (line: string) => void;
  /** Monotonic milliseconds (tests); durations are measured with it, never with the lease's timestamps. */
  now?: () => number;
}

/** What was in the Lease when we last read it, and when (by our clock) it last changed. */
interface Observed {
  spec: LeaseSpec;
  resourceVersion: string;
  /** Our monotonic time when the record last changed: leases expire relative to this, not renewTime. */
  changedAt: number;
}

/**
 * Leader election through a coordination.k8s.io/v1 Lease, the way client-go's leaderelection does it, over
 * any ResourceClient<Lease> (the cluster's or the embedded store's). A candidate takes the lease when it does
 * not exist, is released (no holder), or has not changed for leaseDuration by the candidate's own clock,
 * so clock skew between hosts does not matter. The leader renews every retryPeriod; when no renewal has
 * succeeded for renewDeadline it stops leading (and must stop acting as leader: the others may take over
 * once leaseDuration has passed). stop() releases the lease so a successor takes over at once.
 *
 * After leadership is lost the elector ends (done resolves), like client-go's RunOrDie: the process should
 * exit and start over rather than run on with state from its time as leader.
 */
export class LeaderElector {
  readonly #options: Required<
    Pick<LeaderElectionOptions, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs' | 'now'>
  > &
    LeaderElectionOptions;
  readonly #stop = new AbortController();
  #observed: Observed | undefined;
  #leading: AbortController | undefined;
  #lastRenewAt = 0;
  #lastLeader: string | undefined;
  #done: Promise<void> | undefined;

  constructor(options: LeaderElectionOptions) {
    const leaseDurationMs = options.leaseDurationMs ?? 15_000;
    const renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    const retryPeriodMs = options.retryPeriodMs ?? 2_000;
    if (!(renewDeadlineMs < leaseDurationMs))
      throw new Error('renewDeadlineMs must be less than leaseDurationMs');
    if (!(retryPeriodMs < renewDeadlineMs))
      throw new Error('retryPeriodMs must be less than renewDeadlineMs');
    if (!options.identity) throw new Error('a leader election identity is required');
    this.#options = {
      ...options,
      leaseDurationMs,
      renewDeadlineMs,
      retryPeriodMs,
      now: options.now ?? (() => performance.now()),
    };
  }

  /** Starts campaigning (idempotent); `done` resolves when leadership was lost or stop() finished. */
  start(): void {
    this.#done ??= this.#run();
  }

  /** Resolves when the elector has ended: leadership lost, or stopped. */
  get done(): Promise<void> {
    return this.#done ?? Promise.resolve();
  }

  get isLeader(): boolean {
    return this.#leading !== undefined;
  }

  /** The holder of the lease as last seen ('' when released). */
  get leader(): string | undefined {
    return this.#observed?.spec.holderIdentity;
  }

  /** Stops campaigning; a leader releases the lease (empty holder) so a successor need not wait. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#done;
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    // Candidate: try until the lease is ours.
    while (!signal.aborted && !(await this.#tryAcquireOrRenew())) {
      await sleep(jittered(this.#options.retryPeriodMs), signal);
    }
    if (signal.aborted) return;
    this.#startLeading();
    // Leader: renew every retryPeriod; give up when renewals have failed for renewDeadline.
    while (!signal.aborted) {
      await sleep(this.#options.retryPeriodMs, signal);
      if (signal.aborted) break;
      // A renewal that hangs (a half-open connection) must not stretch leadership past the deadline.
      const left = this.#options.renewDeadlineMs - (this.#options.now() - this.#lastRenewAt);
      if (await beforeDeadline(this.#tryAcquireOrRenew(), left)) continue;
      if (this.#options.now() - this.#lastRenewAt >= this.#options.renewDeadlineMs) {
        this.#log(`could not renew lease ${this.#options.name} within the renew deadline; leadership lost`);
        this.#stopLeading('lost');
        return;
      }
    }
    await this.#release();
    this.#stopLeading('released');
  }

  /** One round of client-go's tryAcquireOrRenew; true when we hold the lease afterwards. */
  async #tryAcquireOrRenew(): Promise<boolean> {
    const { leases, name, identity } = this.#options;
    const now = new Date();
    const mine: LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(this.#options.leaseDurationMs / 1000),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    try {
      const current = await leases.get(name);
      if (!current) {
        const created = await leases.create({
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name },
          spec: mine,
        });
        return this.#succeeded(created);
      }
      this.#observe(current);
      const spec = current.spec ?? {};
      const heldByOther = Boolean(spec.holderIdentity) && spec.holderIdentity !== identity;
      if (heldByOther && !this.#expired(spec)) return false;
      const renewing = spec.holderIdentity === identity;
      const next: LeaseSpec = renewing
        ? {
            ...mine,
            acquireTime: spec.acquireTime ?? mine.acquireTime,
            leaseTransitions: spec.leaseTransitions ?? 0,
          }
        : { ...mine, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 };
      // update() carries current's resourceVersion: of two candidates racing for the lease, one gets 409.
      const updated = await leases.update({ ...current, spec: next });
      return this.#succeeded(updated);
    } catch (error) {
      if (!isResourceError(error, 'Conflict') && !isResourceError(error, 'AlreadyExists')) {
        this.#log(`lease ${name}: ${(error as Error).message}`);
      }
      return false;
    }
  }

  /** A holder's claim has lapsed when the record has not changed for its duration, by our clock. */
  #expired(spec: LeaseSpec): boolean {
    const observed = this.#observed;
    if (!observed) return false;
    const durationMs = (spec.leaseDurationSeconds ?? 0) * 1000 || this.#options.leaseDurationMs;
    return this.#options.now() - observed.changedAt >= durationMs;
  }

  #observe(lease: Lease): void {
    const resourceVersion = lease.metadata.resourceVersion ?? '';
    const previous = this.#observed;
    // Any write (a renewal, a takeover) moves the resourceVersion: that is the change we time from.
    if (!previous || previous.resourceVersion !== resourceVersion) {
      this.#observed = { spec: lease.spec ?? {}, resourceVersion, changedAt: this.#options.now() };
    }
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder && holder !== this.#lastLeader) {
      this.#lastLeader = holder;
      this.#call(() => this.#options.onNewLeader?.(holder));
    }
  }

  #succeeded(lease: Lease): boolean {
    this.#observe(lease);
    this.#lastRenewAt = this.#options.now();
    return true;
  }

  #startLeading(): void {
    this.#leading = new AbortController();
    this.#log(`acquired lease ${this.#options.name} as ${this.#options.identity}`);
    const signal = this.#leading.signal;
    this.#call(() => this.#options.onStartedLeading?.(signal));
  }

  #stopLeading(reason: 'lost' | 'released'): void {
    const leading = this.#leading;
    if (!leading) return;
    this.#leading = undefined;
    leading.abort();
    this.#call(() => this.#options.onStoppedLeading?.(reason));
  }

  /** Empty holder and a one-second duration, as client-go releases: candidates take it on their next try. */
  async #release(): Promise<void> {
    const { leases, name, identity } = this.#options;
    try {
      const current = await leases.get(name);
      if (!current || current.spec?.holderIdentity !== identity) return;
      const now = microTime(new Date());
      await leases.update({
        ...current,
        spec: {
          ...current.spec,
          holderIdentity: '',
          leaseDurationSeconds: 1,
          acquireTime: now,
          renewTime: now,
        },
      });
      this.#log(`released lease ${name}`);
    } catch (error) {
      this.#log(`lease ${name}: release failed (${(error as Error).message}); it expires by itself`);
    }
  }

  #call(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.#log(`leader election callback failed: ${(error as Error).message}`);
    }
  }

  #log(line: string): void {
    this.#options.log?.(`leader election: ${line}`);
  }
}

/** The attempt's answer, or false when it takes longer than ms. */
async function beforeDeadline(attempt: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, ms));
  });
  try {
    return await Promise.race([attempt, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** client-go waits retryPeriod × [1, 1.2) between tries, so candidates do not move in lockstep. */
function jittered(ms: number): number {
  return ms * (1 + 0.2 * Math.random());
}
