/**
 * The execution layer's room (runs/execution/, docs/developers/run-path.md), read from the code: what an
 * execution reports is written to the store there only, an execution's outcome makes a run terminal there
 * only (the other terminal writes are the ones that end a run without an execution's outcome), and the
 * three transports hand orders, events and results to it instead of doing its work. The import rules
 * (import-graph.test.ts) keep the layer's parts behind runs/execution/index.ts; this test keeps its work
 * from being done again outside it with the store's or the pool's own calls.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..', '..', '..');

/** The source folders (tests, benchmarks and the store itself, which defines these calls, left out). */
const SOURCES = ['agent', 'api', 'bin', 'config', 'contract', 'engine', 'kube', 'operator', 'platform']
  .concat(['runner', 'runs', 'schedules', 'systems', 'tools'])
  .flatMap((folder) =>
    readdirSync(join(REPO, folder), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
      .map((entry) => relative(REPO, join(entry.parentPath, entry.name)).split('\\').join('/')),
  );

/** The files whose code (comments left out) matches `pattern`. */
function filesCalling(pattern: RegExp): string[] {
  return SOURCES.filter((file) => {
    const code = readFileSync(join(REPO, file), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    return pattern.test(code);
  }).sort();
}

/** The transports: each carries orders, events and results between an execution and the layer. */
const TRANSPORTS = ['runs/execute-sync.ts', 'operator/launchers/pool.ts', 'api/internal/routes.ts'];

describe('the execution layer', () => {
  it("stores what an execution reports (step results, a runner's event numbers) in runs/execution/ only", () => {
    expect(filesCalling(/\.(saveStepResult|acceptEvents|nextStepSeq)\(/)).toEqual([
      'runs/execution/report.ts',
    ]);
  });

  it("makes a run terminal from an execution's outcome in runs/execution/ only", () => {
    // Besides finish.ts, the writers that end a run without an execution's outcome: a cancel, startup
    // recovery, the operator's verdicts on a lost or late runner (operator/toolrun/), a start that never
    // became a ToolRun. A new one is a decision: add it here, and to docs/developers/run-path.md.
    expect(filesCalling(/\.(finishRun|abortRun|failRunningRuns|failStartedRuns)\(/)).toEqual([
      'operator/outbox/start.ts',
      'operator/toolrun/execute.ts',
      'runs/cancel.ts',
      'runs/execution/finish.ts',
      'runs/recovery.ts',
    ]);
  });

  it('hands orders to the worker pool in runs/execution/ only', () => {
    expect(filesCalling(/\bpool\.run\(/)).toEqual(['runs/execution/in-process.ts']);
  });

  it.each(TRANSPORTS)('%s orders and finishes its runs through the layer', (file) => {
    const code = readFileSync(join(REPO, file), 'utf8');
    expect(code).toMatch(/from '(\.\.\/)+runs\/execution\/index\.ts'|from '\.\/execution\/index\.ts'/);
    expect(code).toMatch(/\bbuildOrder\(/);
    expect(code).toMatch(/\bfinishRun\(/);
  });
});
