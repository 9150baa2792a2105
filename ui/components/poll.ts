/**
 * Reading a list again every few seconds while the tab is visible (a hidden tab waits, then reads at once
 * when it is looked at again), as the runs, gateways and schedules pages keep themselves current. Each
 * read gets the signal that aborts it when the page goes or `deps` change; `everyMs` undefined reads once,
 * and a read that answers `false` is the last until `deps` change (the systems pages read again only
 * while a documentation is pending).
 */
import { useEffect, useState } from 'preact/hooks';

export function usePoll(
  read: (signal: AbortSignal) => Promise<boolean | undefined>,
  everyMs: number | undefined,
  deps: unknown[],
): void {
  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async () => {
      const again = await read(abort.signal);
      if (!abort.signal.aborted && everyMs !== undefined && again !== false)
        timer = setTimeout(poll, everyMs);
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

/** What a page read last, why its latest read failed, and when it last answered. */
export interface Polled<T> {
  answer: T | undefined;
  /** The latest read's failure; undefined again once a read answers. The last answer is kept. */
  error: unknown;
  updatedAt: Date | undefined;
}

/**
 * usePoll for a page that shows what one read answers (a list, a record): the answer, the error to show
 * with ErrorMessage, and when it was read; an aborted read (the page gone, `deps` changed) is no error.
 */
export function usePolled<T>(
  read: (signal: AbortSignal) => Promise<T>,
  everyMs: number | undefined,
  deps: unknown[],
): Polled<T> {
  const [polled, setPolled] = useState<Polled<T>>({
    answer: undefined,
    error: undefined,
    updatedAt: undefined,
  });
  usePoll(
    async (signal) => {
      try {
        const answer = await read(signal);
        setPolled({ answer, error: undefined, updatedAt: new Date() });
      } catch (caught) {
        if (!signal.aborted) setPolled((last) => ({ ...last, error: caught }));
      }
    },
    everyMs,
    deps,
  );
  return polled;
}
