/**
 * The changes between two JSON values as the API answers them (a replay's, a tool test's: ReplayValueDiff),
 * each at its place (a JSON pointer) with the value on either side, named as the caller says (`original`
 * and `replay`, `expected` and `got`). A list, not a table, so it reads on a narrow screen.
 */
import type { ReplayValueDiff } from '../api/types.ts';

const side = (value: unknown) => (value === undefined ? '(none)' : JSON.stringify(value));

export function ValueDiff({
  diff,
  label,
  before,
  after,
}: {
  diff: ReplayValueDiff;
  /** Names the list for screen readers ("Differences of the output"). */
  label: string;
  before: string;
  after: string;
}) {
  if (!diff.changed) return <p class="muted">No difference.</p>;
  return (
    <>
      <ul class="value-diff" aria-label={label}>
        {diff.changes.map((change) => (
          <li key={change.path}>
            <code class="diff-path">{change.path || '/'}</code>{' '}
            <span class="diff-before">
              {before} <code>{side(change.before)}</code>
            </span>
            {', '}
            <span class="diff-after">
              {after} <code>{side(change.after)}</code>
            </span>
          </li>
        ))}
      </ul>
      {diff.truncated && <p class="muted">… and more differences than listed.</p>}
    </>
  );
}
