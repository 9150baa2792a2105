/**
 * What a run's page decides from its data (ui/pages/runs/run-rules.ts): what its Resume button says, by
 * the API's rule of where a resume starts (docs/authoring.md#resume), and which data starts collapsed on a
 * narrow screen. The browser tests (test/integration/ui/run-resume.test.ts, run-narrow.test.ts) use both
 * through the page.
 */
import { describe, expect, it } from 'vitest';
import { LONG_DATA_CHARS, longerThan, resumeLabel } from '../../../ui/pages/runs/run-rules.ts';

const ok = (stepId: string) => ({ stepId, success: true });
const failed = (stepId: string, error = 'HTTP 404') => ({ stepId, success: false, error });

describe("a run page's Resume button", () => {
  it('names the failed step and how many steps before it the resume tries to reuse', () => {
    expect(resumeLabel([ok('user'), failed('todos')])).toBe('Resume from step todos, reusing up to 1 step');
    expect(resumeLabel([ok('a'), ok('b'), failed('c'), failed('d')])).toBe(
      'Resume from step c, reusing up to 2 steps',
    );
    expect(resumeLabel([failed('first')])).toBe('Resume from step first, reusing no step');
  });

  it("starts a cancelled run at the step the cancel stopped (stored as failed, 'Run was cancelled')", () => {
    expect(resumeLabel([ok('user'), failed('todos', 'Run was cancelled')])).toBe(
      'Resume from step todos, reusing up to 1 step',
    );
  });

  it('resumes after the last step when every step succeeded (the output transform failed)', () => {
    expect(resumeLabel([ok('user'), ok('todos')])).toBe('Resume after step todos, reusing up to 2 steps');
  });

  it('says only "from the failed step" when no step result is stored', () => {
    expect(resumeLabel([])).toBe('Resume from the failed step');
  });
});

describe('long data on a narrow screen', () => {
  it('counts about the JSON length of the data', () => {
    expect(longerThan({ note: 'short' }, LONG_DATA_CHARS)).toBe(false);
    expect(longerThan({ note: 'x'.repeat(LONG_DATA_CHARS) }, LONG_DATA_CHARS)).toBe(true);
    expect(
      longerThan(
        Array.from({ length: 300 }, (_, i) => i * 1000),
        LONG_DATA_CHARS,
      ),
    ).toBe(true);
    expect(longerThan([1, null, true, { a: [2] }], LONG_DATA_CHARS)).toBe(false);
  });

  it('stops counting at the limit, so a result of many megabytes costs no more than a short one', () => {
    let visited = 0;
    const items = new Proxy(
      Array.from({ length: 1_000_000 }, () => ({ id: 1 })),
      {
        get(target, key, receiver) {
          if (typeof key === 'string' && /^\d+$/.test(key)) visited++;
          return Reflect.get(target, key, receiver);
        },
      },
    );
    expect(longerThan(items, LONG_DATA_CHARS)).toBe(true);
    expect(visited).toBeLessThan(LONG_DATA_CHARS);
  });
});
