/** The "Live updates" switch of a page that reads its data again while the tab is visible (usePoll). */
import { Checkbox } from './checkbox.tsx';

/** It turns reading again on and off; beside it, what the page says of its last read. */
export function LiveUpdates(props: { live: boolean; onChange(live: boolean): void; status: string }) {
  return (
    <div class="live">
      <Checkbox checked={props.live} change={props.onChange}>
        Live updates
      </Checkbox>
      <span class="muted" role="status">
        {props.status}
      </span>
    </div>
  );
}
