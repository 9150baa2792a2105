/**
 * What a run's page decides from its data, without a browser (test/unit/ui/run-page.test.ts): what
 * "Resume" says it does, and which data is long enough to start collapsed on a narrow screen.
 */
import type { StepResult } from '../../api/types.ts';

/**
 * Data longer than this as JSON (about a screen of lines on a phone) starts collapsed on a narrow screen,
 * behind a toggle: open two levels deep and wrapped at 390 px, 40 long strings made a page 7 000 px tall.
 */
export const LONG_DATA_CHARS = 2_000;

/** Whether `value` as JSON is longer than `limit` characters, about; stops counting there (10 MB costs nothing). */
export function longerThan(value: unknown, limit: number): boolean {
  let left = limit;
  const walk = (item: unknown): boolean => {
    if (Array.isArray(item)) {
      for (const child of item) {
        left -= 2;
        if (left < 0 || walk(child)) return true;
      }
      return false;
    }
    if (item !== null && typeof item === 'object') {
      for (const key in item) {
        left -= key.length + 4;
        if (left < 0 || walk((item as Record<string, unknown>)[key])) return true;
      }
      return false;
    }
    left -= typeof item === 'string' ? item.length + 2 : String(item).length;
    return left < 0;
  };
  return walk(value);
}

/**
 * What "Resume" says it does, by the API's rule (docs/authoring.md#resume): it starts at the first step
 * whose stored result failed (a cancelled run's stopped step failed too), or after the last stored step
 * when they all succeeded (the output transform failed), and tries to reuse every step before that; the
 * server runs a step again when its definition changed since.
 */
export function resumeLabel(steps: readonly StepResult[]): string {
  const failed = steps.findIndex((step) => !step.success);
  const reusable = failed >= 0 ? failed : steps.length;
  const reuse =
    reusable === 0 ? 'reusing no step' : `reusing up to ${reusable} step${reusable === 1 ? '' : 's'}`;
  if (failed >= 0) return `Resume from step ${steps[failed]?.stepId}, ${reuse}`;
  if (steps.length > 0) return `Resume after step ${steps[steps.length - 1]?.stepId}, ${reuse}`;
  return 'Resume from the failed step';
}
