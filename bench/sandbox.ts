import { defaultEngineSettings } from '../config/config.ts';
import type { JsonValue } from '../contract/json.ts';
import { sandboxOptions } from '../engine/deps.ts';
import { Sandbox } from '../engine/sandbox/sandbox.ts';
import { emit, round } from './stats.ts';

const WARMUP = 300;
const SAMPLES = 2000;
const TRANSFORM = '(s) => ({n: s.items.length})';
/** The same reshaping written as a block body, which only the isolate answers. */
const TRANSFORM_IN_ISOLATE = '(s) => { return {n: s.items.length}; }';
/**
 * The bench tool's outputTransform (bench/api.ts); a small transform with an operator (answered on the
 * host since issue 34's second round, selector.ts); the same as a block body, which runs in the isolate.
 */
const SMALL_SELECTOR = '(s) => s.get.data.ok';
const SMALL_EXPRESSION = '(s) => ({ ok: s.get.data.ok === true })';
const SMALL_CODE = '(s) => { return { ok: s.get.data.ok === true }; }';
const SMALL_INPUT: JsonValue[] = [
  { get: { data: { ok: true }, status: 200, headers: { 'content-type': 'application/json' } } },
];
const SMALL_RUNS = 3000;
const transformFn = (s: { items: unknown[] }) => ({ n: s.items.length });

function input(items: number): JsonValue[] {
  return [
    {
      items: Array.from({ length: items }, (_, i) => ({
        id: i,
        name: `User ${i}`,
        email: `user${i}@example.com`,
        tags: ['alpha', 'beta', `group-${i % 7}`],
      })),
    },
  ];
}

/**
 * engine.transform_overhead: wall time of one transform evaluation as a run's step makes it (in the
 * run's sandbox context), for a ≤ 1 KB input and for 1 000 items (~80 KB), end to end: argument copy
 * in, call, result copy out.
 *
 * - p50Us / p99Us: evaluations back to back, a new run (context) every 7 evaluations, as the
 *   pagination tool does;
 * - floorP50Us: the same function called directly on the host (no sandbox, no copy): the floor;
 * - copyP50Us: host JSON.stringify + JSON.parse of the arguments, the floor of any deep copy (so the
 *   sandbox's own share can be told apart from the cost of copying the input);
 * - freshContextP50Us: the same evaluation with a fresh context each time (Sandbox.evaluate).
 * The transform reads a length into an object literal: a selector, answered on the host (selector.ts);
 * `isolate` is the same figure for the same reshaping as a block body, which only the isolate answers, as
 * every transform ran before issue 34.
 *
 * engine.small_transform_cpu: CPU-µs (the whole process: isolated-vm's threads included) per run of a
 * one-evaluation transform as a run makes it (openRun, evaluate, close), back to back: the bench tool's
 * outputTransform (a selector), a small transform with an operator (answered on the host too) and the
 * same as a block body (the isolate).
 */
export async function benchSandbox(): Promise<void> {
  const sandbox = new Sandbox(sandboxOptions(defaultEngineSettings()));
  try {
    for (const [name, source] of [
      ['selector', SMALL_SELECTOR],
      ['expression', SMALL_EXPRESSION],
      ['isolate', SMALL_CODE],
    ] as const) {
      const perRun = async () => {
        const run = sandbox.openRun({ key: 'bench', tool: 'bench' });
        try {
          await run.evaluate(source, SMALL_INPUT);
        } finally {
          run.close();
        }
      };
      for (let i = 0; i < WARMUP; i++) await perRun();
      const before = process.cpuUsage();
      const wall = await sample(SMALL_RUNS, perRun);
      const cpu = process.cpuUsage(before);
      emit({
        bench: 'engine.small_transform_cpu',
        transform: name,
        source,
        runs: SMALL_RUNS,
        cpuUsPerRun: round((cpu.user + cpu.system) / SMALL_RUNS, 1),
        p50Us: quantile(wall, 0.5),
        target: 100,
      });
    }
    for (const items of [8, 1000]) {
      const args = input(items);
      const backToBack = await sampleInRuns(sandbox, TRANSFORM, args);
      const fresh = await sample(SAMPLES / 4, () => sandbox.evaluate(TRANSFORM_IN_ISOLATE, args));
      const isolate = await sampleInRuns(sandbox, TRANSFORM_IN_ISOLATE, args);
      const floor = await sample(SAMPLES, async () => transformFn(args[0] as { items: unknown[] }));
      const copy = await sample(SAMPLES, async () => JSON.parse(JSON.stringify(args)));
      const p50 = quantile(backToBack, 0.5);
      const floorP50 = quantile(floor, 0.5);
      process.stdout.write(
        `${JSON.stringify({
          bench: 'engine.transform_overhead',
          items,
          inputBytes: JSON.stringify(args).length,
          p50Us: p50,
          p99Us: quantile(backToBack, 0.99),
          floorP50Us: floorP50,
          overheadP50Us: p50 - floorP50,
          copyP50Us: quantile(copy, 0.5),
          freshContextP50Us: quantile(fresh, 0.5),
          isolate: {
            source: TRANSFORM_IN_ISOLATE,
            p50Us: quantile(isolate, 0.5),
            p99Us: quantile(isolate, 0.99),
          },
          targetP50Us: items > 100 ? 300 : 150,
        })}\n`,
      );
    }
  } finally {
    sandbox.dispose();
  }
}

/**
 * `source` evaluated back to back in a run's context, a new run every 7 evaluations (as a pagination tool's
 * transforms share one): WARMUP evaluations, then SAMPLES timed. Durations in µs, sorted.
 */
async function sampleInRuns(sandbox: Sandbox, source: string, args: JsonValue[]): Promise<number[]> {
  let run = sandbox.openRun();
  let used = 0;
  const inRun = () => {
    if (used++ === 7) {
      run.close();
      run = sandbox.openRun();
      used = 1;
    }
    return run.evaluate(source, args);
  };
  try {
    for (let i = 0; i < WARMUP; i++) await inRun();
    return await sample(SAMPLES, inRun);
  } finally {
    run.close();
  }
}

/** Durations in µs, sorted. */
async function sample(count: number, run: () => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = process.hrtime.bigint();
    await run();
    samples.push(Number(process.hrtime.bigint() - started) / 1000);
  }
  return samples.sort((a, b) => a - b);
}

function quantile(sorted: number[], q: number): number {
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);
}
