import type { PreparedContext } from './prepared-context.ts';

interface Held {
  readonly prepared: PreparedContext;
  /** Evaluations using the context right now; it is released only once none is. */
  inUse: number;
}

/**
 * The contexts of one run: every evaluation of the run on an isolate uses the run's context there,
 * so a run pays for one context per isolate it touches, not one per evaluation. A context is never
 * shared with another run, and is released when the run closes. `generation` identifies one isolate
 * (a replaced isolate is a new generation: its old contexts died with it).
 */
export class RunContexts {
  readonly #held = new Map<object, Held>();
  #closed = false;
  /**
   * An evaluation of the run went to an isolate: its context there may have been changed (a prototype,
   * `Object.prototype.toJSON`), so the run's later selectors are no longer answered on the host
   * (selector.ts answers as a fresh context would).
   */
  touched = false;

  get closed(): boolean {
    return this.#closed;
  }

  /** Whether the run holds a context on this isolate generation. */
  holds(generation: object | undefined): boolean {
    return generation !== undefined && this.#held.has(generation);
  }

  /** The run's context on this isolate generation, marked in use; undefined if it has none yet. */
  acquire(generation: object): PreparedContext | undefined {
    const held = this.#held.get(generation);
    if (held === undefined) return undefined;
    held.inUse++;
    return held.prepared;
  }

  /** Adopts a fresh context as the run's context on this generation, marked in use. */
  adopt(generation: object, prepared: PreparedContext): void {
    this.#held.set(generation, { prepared, inUse: 1 });
  }

  /** An evaluation is done with the context; a closed run's context goes once nobody uses it. */
  done(generation: object): void {
    const held = this.#held.get(generation);
    if (held === undefined) return;
    held.inUse--;
    if (this.#closed && held.inUse <= 0) {
      this.#held.delete(generation);
      held.prepared.release();
    }
  }

  /** The isolate of this generation is gone: forget its context. */
  forget(generation: object): void {
    this.#held.delete(generation);
  }

  /** The run ended: its contexts are released (those still in use when their evaluation ends). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const [generation, held] of this.#held) {
      if (held.inUse > 0) continue;
      this.#held.delete(generation);
      held.prepared.release();
    }
  }
}
