/**
 * The run's bounds as one promise for a connection step: it rejects when the run is cancelled or its
 * deadline passes, whichever comes first, so a step can race its work against it and then stop the work
 * on the server (each protocol knows how: pg_cancel_backend, KILL QUERY, …).
 */

export interface StepWatchdog {
  /** Rejects with `aborted()` or `timeout()`; never resolves. Handled, so an unraced one is harmless. */
  fired: Promise<never>;
  /** Stops watching (always call it: it clears the timer). */
  dispose(): void;
}

export function stepWatchdog(
  signal: AbortSignal,
  deadline: number,
  errors: { aborted: () => Error; timeout: () => Error },
): StepWatchdog {
  let dispose = (): void => {};
  const fired = new Promise<never>((_, reject) => {
    const onAbort = (): void => reject(errors.aborted());
    const timer = setTimeout(() => reject(errors.timeout()), Math.max(0, deadline - Date.now()));
    signal.addEventListener('abort', onAbort, { once: true });
    dispose = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
  });
  fired.catch(() => {});
  return { fired, dispose: () => dispose() };
}
