/**
 * Reading a list again every few seconds while the tab is visible (a hidden tab waits, then reads at once
 * when it is looked at again), as the runs, gateways and schedules pages keep themselves current. Each
 * read gets the signal that aborts it when the page goes or `deps` change; `everyMs` undefined reads once.
 */
import { useEffect } from 'preact/hooks';

export function usePoll(
  read: (signal: AbortSignal) => Promise<void>,
  everyMs: number | undefined,
  deps: unknown[],
): void {
  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      await read(abort.signal);
      if (!abort.signal.aborted && everyMs !== undefined) timer = setTimeout(poll, everyMs);
    };
    const poll = () => {
      if (document.visibilityState === 'visible') void load();
      else timer = setTimeout(poll, everyMs);
    };
    void load();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, deps);
}
