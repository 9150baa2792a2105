import { defaultEngineSettings } from '../config/config.ts';
import type { JsonValue } from '../contract/json.ts';
import { sandboxOptions } from '../engine/deps.ts';
import { Sandbox } from '../engine/sandbox/sandbox.ts';

const WARMUP = 300;
const SAMPLES = 2000;
const TRANSFORM = '(s) => ({n: s.items.length})';
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
 */
export async function benchSandbox(): Promise<void> {
  const sandbox = new Sandbox(sandboxOptions(defaultEngineSettings()));
  try {
    for (const items of [8, 1000]) {
      const args = input(items);
      let run = sandbox.openRun();
      let used = 0;
      const inRun = () => {
        if (used++ === 7) {
          run.close();
          run = sandbox.openRun();
          used = 1;
        }
        return run.evaluate(TRANSFORM, args);
      };
      for (let i = 0; i < WARMUP; i++) await inRun();
      const backToBack = await sample(SAMPLES, inRun);
      run.close();
      const fresh = await sample(SAMPLES / 4, () => sandbox.evaluate(TRANSFORM, args));
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
          targetP50Us: items > 100 ? 300 : 150,
        })}\n`,
      );
    }
  } finally {
    sandbox.dispose();
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
