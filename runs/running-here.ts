import { ShutdownInterrupt } from './interrupted.ts';

/**
 * The runs executing in this process (sync runs, and the pool launcher's async runs), each with the
 * controller that stops it: how a cancel reaches a run here, and how a shutdown stops them all.
 */
export class RunningHere {
  readonly #controllers = new Map<string, AbortController>();

  /** Registers a run executing here; returns the unregister function. */
  track(runId: string, controller: AbortController): () => void {
    this.#controllers.set(runId, controller);
    return () => this.#controllers.delete(runId);
  }

  /** Aborts the execution of runId in this process, if it runs here; whether it did. */
  abort(runId: string): boolean {
    const controller = this.#controllers.get(runId);
    controller?.abort();
    return controller !== undefined;
  }

  /**
   * Shutdown after the grace period: every run still executing here is stopped. Not a cancel: a sync run
   * fails saying the server shut down, and the pool launcher hands read-only async runs back.
   */
  interruptAll(): void {
    const reason = new ShutdownInterrupt();
    for (const controller of this.#controllers.values()) controller.abort(reason);
  }
}
