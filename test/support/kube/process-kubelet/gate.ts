import type { Gate } from './status.ts';

/**
 * Open while the node is up. `nodeLost()` closes it: status writes, deletions and container starts
 * wait here until the node is restored, as nothing leaves a machine that dropped off the network.
 */
export class NodeGate implements Gate {
  #open = true;
  readonly #waiters = new Set<() => void>();

  get isOpen(): boolean {
    return this.#open;
  }

  close(): void {
    this.#open = false;
  }

  open(): void {
    this.#open = true;
    for (const waiter of [...this.#waiters]) waiter();
  }

  wait(signal?: AbortSignal): Promise<void> {
    if (this.#open || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.#waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.#waiters.add(done);
      signal?.addEventListener('abort', done);
    });
  }
}
