/**
 * The run's skip report (a vitest reporter, after the default one): before the tests start it names the
 * suites that will skip because a part of the machine is missing (prerequisites.ts) and why; after the
 * summary it names every skipped test file again, with the part it lacked, or as skipped by the file
 * itself when no part explains it. So a green run on a machine without Chromium or a control plane says
 * so, twice, instead of passing quietly.
 */
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import type { Reporter, TestModule, TestSpecification, Vitest } from 'vitest/node';
import { PREREQUISITES, type Prerequisite, usedBy } from './prerequisites.ts';

const REPO = resolve(import.meta.dirname, '..', '..');

interface Missing {
  prerequisite: Prerequisite;
  reason: string;
}

/** The parts missing here, each probed once per run. */
function missingParts(): Missing[] {
  return Object.values(PREREQUISITES).flatMap((prerequisite: Prerequisite) => {
    const reason = prerequisite.missing();
    return reason ? [{ prerequisite, reason }] : [];
  });
}

const files = (count: number) => `${count} test file${count === 1 ? '' : 's'}`;

/** A test file's source (empty when it cannot be read): what says which parts it needs. */
function sourceOf(path: string): string {
  try {
    return readFileSync(resolve(REPO, path), 'utf8');
  } catch {
    return '';
  }
}

/** The lines of the report: one per missing part that explains some of `paths`, then the rest by file. */
export function skipLines(missing: Missing[], paths: string[], unexplained: Map<string, string>): string[] {
  const sources = new Map(paths.map((path) => [path, sourceOf(path)]));
  const lines: string[] = [];
  for (const { prerequisite, reason } of missing) {
    const theirs = paths.filter((path) => usedBy(prerequisite, sources.get(path) ?? ''));
    if (theirs.length > 0) lines.push(`  ${prerequisite.suites} (${files(theirs.length)}): ${reason}`);
  }
  for (const [path, what] of unexplained) lines.push(`  ${path}: ${what}`);
  return lines;
}

export default class SkipReport implements Reporter {
  #vitest: Vitest | undefined;
  #missing: Missing[] = [];

  onInit(vitest: Vitest): void {
    this.#vitest = vitest;
  }

  #print(lines: string[]): void {
    const text = `${lines.join('\n')}\n`;
    if (this.#vitest) this.#vitest.logger.log(text);
    else process.stdout.write(text);
  }

  onTestRunStart(specifications: ReadonlyArray<TestSpecification>): void {
    this.#missing = missingParts();
    const paths = specifications.map((spec) => relative(REPO, spec.moduleId));
    const lines = skipLines(this.#missing, paths, new Map());
    if (lines.length === 0) return;
    this.#print([
      'These suites will skip on this machine (npm test sets up what they need: docs/developers/testing.md):',
      ...lines,
    ]);
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    // A name filter (-t) skips the tests it leaves out: that is no part missing.
    const filtered = Boolean(this.#vitest?.config.testNamePattern);
    const explainedPaths: string[] = [];
    const unexplained = new Map<string, string>();
    for (const module of testModules) {
      const path = relative(REPO, module.moduleId);
      const skipped = [...module.children.allTests('skipped')];
      if (skipped.length === 0 && module.state() !== 'skipped') continue;
      const source = sourceOf(path);
      const explained = this.#missing.some(({ prerequisite }) => usedBy(prerequisite, source));
      const whole = module.state() === 'skipped' || [...module.children.allTests()].length === skipped.length;
      if (explained) {
        explainedPaths.push(path);
      } else if (!filtered) {
        const notes = [
          ...new Set(
            skipped.flatMap((test) => {
              const result = test.result();
              return result.state === 'skipped' && result.note ? [result.note] : [];
            }),
          ),
        ];
        const what = whole ? 'every test skipped' : `${skipped.length} test(s) skipped`;
        unexplained.set(path, `${what} by the file itself${notes.length ? ` (${notes.join('; ')})` : ''}`);
      }
    }
    const lines = skipLines(this.#missing, explainedPaths, unexplained);
    if (lines.length === 0) return;
    this.#print(['', 'Skipped on this machine:', ...lines]);
  }
}
