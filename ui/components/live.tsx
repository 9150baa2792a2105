/** The "Live updates" switch of a page that reads its data again while the tab is visible (usePoll). */
/** It turns reading again on and off; beside it, what the page says of its last read. */
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
