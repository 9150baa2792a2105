/**
 * Pages that follow the API's data by reading it again (the runs list, the Overview): every few seconds
 * while the tab is visible, which costs the server one indexed query per open page, where a stream per
 * tab would hold a connection; and the "Live updates" switch with when the page last read.
 */
import { useEffect } from 'preact/hooks';

/**
 * Calls read at once and whenever `deps` change; then again everyMs after each read ends, while the tab is
 * visible (a hidden tab waits until it is shown). everyMs undefined: once. read gets a signal aborted when
 * the page leaves or deps change, and handles its own failures.
 */
export function usePolling(
  read: (signal: AbortSignal) => Promise<void>,
  everyMs: number | undefined,
  deps: readonly unknown[],
): void {
  useEffect(() => {
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const again = () => {
      if (everyMs !== undefined && !abort.signal.aborted) timer = setTimeout(poll, everyMs);
    };
    const poll = () => {
      if (document.visibilityState === 'visible') void read(abort.signal).finally(again);
      else again();
    };
    void read(abort.signal).finally(again);
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, deps);
}

/** The switch that turns reading again on and off, and what the page says of its last read. */
export function LiveUpdates(props: { live: boolean; onChange(live: boolean): void; status: string }) {
  return (
    <div class="live">
      <label>
        <input
          type="checkbox"
          checked={props.live}
          onChange={(event) => props.onChange(event.currentTarget.checked)}
        />{' '}
        Live updates
      </label>
      <span class="muted" role="status">
        {props.status}
      </span>
    </div>
  );
}
