/**
 * Which waiting evaluation a free isolate takes next (sandbox.ts asks whenever a lane is free).
 *
 * Evaluations wait per API key, and per tool within a key. Keys are served round-robin, and so are
 * the tools of a key, so one key's backlog (32 endless loops) never stands in front of another key's
 * one-line transform, nor one tool's in front of another tool's of the same key. Two caps:
 * - a key runs at most `keyConcurrency` evaluations at once; the sandbox keeps more isolates than
 *   that, so another key always finds one;
 * - a tool whose evaluation ran out of time is slowed: that key's evaluations of it run one at a
 *   time, and regain one more at once for every RECOVERY_EVALUATIONS that finish in time, back up
 *   to the key's cap. A tool that keeps timing out holds one isolate, not all the key may use.
 */

/** What the queue needs to know of an evaluation. */
export interface FairJob {
  /** The API key (id) whose run asked for it; '' when there is none (tests, the CLI runner). */
  readonly key: string;
  /** The tool of the run; '' when there is none. */
  readonly tool: string;
  /** Settled while waiting (aborted): dropped instead of run. */
  readonly settled: boolean;
}

/** In-time evaluations a slowed tool needs for each step back towards the key's cap. */
export const RECOVERY_EVALUATIONS = 3;
/** Slowed tools remembered at most; beyond it the idle ones are forgotten, oldest first. */
const MAX_PACED_TOOLS = 1024;

class ToolLine<J> {
  readonly id: string;
  readonly jobs: J[] = [];
  constructor(id: string) {
    this.id = id;
  }
}

class KeyLine<J> {
  /** Evaluations of the key running now. */
  running = 0;
  /** Jobs waiting, settled ones not dropped yet included. */
  queued = 0;
  readonly tools = new Map<string, ToolLine<J>>();
  /** Tools with waiting jobs, served round-robin from `cursor`. */
  readonly order: ToolLine<J>[] = [];
  cursor = 0;
  readonly key: string;
  constructor(key: string) {
    this.key = key;
  }
}

/** A (key, tool) that has evaluations running, or was slowed and has not recovered yet. */
interface ToolPace {
  running: number;
  /** Evaluations at once; Infinity: only the key's cap applies. */
  limit: number;
  /** Evaluations finished in time since the last step towards recovery. */
  inTime: number;
}

export class FairQueue<J extends FairJob> {
  readonly #keyConcurrency: number;
  /** Keys with jobs waiting or running. */
  readonly #keys = new Map<string, KeyLine<J>>();
  /** Keys with jobs waiting, served round-robin from `#cursor`. */
  readonly #ring: KeyLine<J>[] = [];
  #cursor = 0;
  readonly #paces = new Map<string, ToolPace>();
  #size = 0;

  constructor(keyConcurrency: number) {
    this.#keyConcurrency = keyConcurrency;
  }

  /** Jobs waiting (including settled ones not dropped yet). */
  get size(): number {
    return this.#size;
  }

  push(job: J): void {
    let line = this.#keys.get(job.key);
    if (line === undefined) {
      line = new KeyLine(job.key);
      this.#keys.set(job.key, line);
    }
    if (line.queued === 0) this.#ring.push(line);
    let tool = line.tools.get(job.tool);
    if (tool === undefined) {
      tool = new ToolLine(job.tool);
      line.tools.set(job.tool, tool);
      line.order.push(tool);
    }
    tool.jobs.push(job);
    line.queued++;
    this.#size++;
  }

  /**
   * The next job a free isolate may run under the caps, counted as running (call `finished` when it
   * ends); undefined when every waiting job is held back by a cap, or none waits.
   */
  take(): J | undefined {
    const ring = this.#ring;
    let visits = ring.length;
    while (visits-- > 0 && ring.length > 0) {
      if (this.#cursor >= ring.length) this.#cursor = 0;
      const index = this.#cursor;
      const line = ring[index] as KeyLine<J>;
      const job = line.running < this.#keyConcurrency ? this.#takeFrom(line) : undefined;
      if (job !== undefined) line.running++;
      if (line.queued === 0) {
        // Out of the ring: the next key moved into `index`, and is next.
        ring.splice(index, 1);
        if (line.running === 0) this.#keys.delete(line.key);
      } else {
        this.#cursor = index + 1;
      }
      if (job !== undefined) {
        const id = paceId(job);
        const pace = this.#paces.get(id);
        if (pace === undefined)
          this.#paces.set(id, { running: 1, limit: Number.POSITIVE_INFINITY, inTime: 0 });
        else pace.running++;
        return job;
      }
    }
    return undefined;
  }

  /** A job `take` gave ended; `timedOut`: it ran out of time, which slows its tool. */
  finished(job: J, timedOut: boolean): void {
    const line = this.#keys.get(job.key);
    if (line !== undefined) {
      line.running--;
      if (line.running === 0 && line.queued === 0) this.#keys.delete(job.key);
    }
    const id = paceId(job);
    const pace = this.#paces.get(id);
    if (pace === undefined) return;
    pace.running--;
    if (timedOut) {
      pace.limit = 1;
      pace.inTime = 0;
      // Re-inserted: the map's order is the order of the last timeouts, oldest first.
      this.#paces.delete(id);
      this.#paces.set(id, pace);
      this.#forgetOldPaces();
      return;
    }
    if (pace.limit !== Number.POSITIVE_INFINITY && ++pace.inTime >= RECOVERY_EVALUATIONS) {
      pace.inTime = 0;
      pace.limit = pace.limit + 1 >= this.#keyConcurrency ? Number.POSITIVE_INFINITY : pace.limit + 1;
    }
    if (pace.running === 0 && pace.limit === Number.POSITIVE_INFINITY) this.#paces.delete(id);
  }

  /** How many evaluations of this key's tool may run at once now (Infinity: only the key's cap). */
  toolLimit(key: string, tool: string): number {
    return this.#paces.get(paceId({ key, tool }))?.limit ?? Number.POSITIVE_INFINITY;
  }

  /** Empties the queue; answers the jobs that were waiting. */
  clear(): J[] {
    const jobs: J[] = [];
    for (const line of this.#ring) for (const tool of line.order) jobs.push(...tool.jobs);
    this.#ring.length = 0;
    this.#keys.clear();
    this.#size = 0;
    return jobs;
  }

  /** The next runnable job of a key, round-robin over its tools; drops settled jobs on the way. */
  #takeFrom(line: KeyLine<J>): J | undefined {
    const order = line.order;
    let visits = order.length;
    while (visits-- > 0 && order.length > 0) {
      if (line.cursor >= order.length) line.cursor = 0;
      const index = line.cursor;
      const tool = order[index] as ToolLine<J>;
      const jobs = tool.jobs;
      while (jobs.length > 0 && (jobs[0] as J).settled) {
        jobs.shift();
        line.queued--;
        this.#size--;
      }
      let job: J | undefined;
      if (jobs.length > 0) {
        const pace = this.#paces.get(paceId(jobs[0] as J));
        if (pace === undefined || pace.running < pace.limit) {
          job = jobs.shift();
          line.queued--;
          this.#size--;
        }
      }
      if (jobs.length === 0) {
        order.splice(index, 1);
        line.tools.delete(tool.id);
      } else {
        line.cursor = index + 1;
      }
      if (job !== undefined) return job;
    }
    return undefined;
  }

  #forgetOldPaces(): void {
    if (this.#paces.size <= MAX_PACED_TOOLS) return;
    for (const [id, pace] of this.#paces) {
      if (this.#paces.size <= MAX_PACED_TOOLS) return;
      if (pace.running === 0) this.#paces.delete(id);
    }
  }
}

function paceId(job: { key: string; tool: string }): string {
  return `${job.key}\n${job.tool}`;
}
