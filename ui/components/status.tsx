import type { RunStatus } from '../api/types.ts';

/** Shape and word, never colour alone: ✓ success, ✕ failed, ⊘ aborted, ◷ running. */
const ICONS: Record<RunStatus, string> = { success: '✓', failed: '✕', aborted: '⊘', running: '◷' };

export function StatusBadge({ status }: { status: RunStatus }) {
  return (
    <span class={`status status-${status}`}>
      <span class="status-icon" aria-hidden="true">
        {ICONS[status]}
      </span>
      {status}
    </span>
  );
}

/** A step's outcome: success or failed, the same way. */
export function StepOutcome({ success }: { success: boolean }) {
  return <StatusBadge status={success ? 'success' : 'failed'} />;
}

/** A status that is not a run's (a schedule, a gateway): its icon and word, coloured like a run status. */
export function Badge({ icon, word, tone }: { icon: string; word: string; tone: RunStatus | 'idle' }) {
  return (
    <span class={`status status-${tone}`}>
      <span class="status-icon" aria-hidden="true">
        {icon}
      </span>
      {word}
    </span>
  );
}
