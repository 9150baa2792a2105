import type { RunStatus } from '../api/types.ts';

/** Shape and word, never colour alone: ✓ success, ✕ failed, ⊘ aborted, ◷ running. */
const ICONS: Record<RunStatus, string> = { success: '✓', failed: '✕', aborted: '⊘', running: '◷' };

export function StatusBadge({ status }: { status: RunStatus }) {
  return <Badge icon={ICONS[status]} word={status} tone={status} />;
}

/** A step's outcome: success or failed, the same way. */
export function StepOutcome({ success }: { success: boolean }) {
  return <StatusBadge status={success ? 'success' : 'failed'} />;
}

/** A badge's colour: a run status's, or muted (neither good nor bad: disabled, none needed). */
type Tone = RunStatus | 'neutral';

/** What a badge shows: an icon and a word, coloured by its tone. */
export interface BadgeProps {
  icon: string;
  word: string;
  tone: Tone;
}

/**
 * A status as an icon and a word, coloured like a run status: a run's, a schedule's, a gateway's, what
 * a system variant is ready for.
 */
export function Badge({ icon, word, tone }: BadgeProps) {
  return (
    <span class={`status status-${tone}`}>
      <span class="status-icon" aria-hidden="true">
        {icon}
      </span>
      {word}
    </span>
  );
}
