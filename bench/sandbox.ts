import type { JsonValue } from '../crds/json.ts';
import { Sandbox } from '../runner/sandbox/sandbox.ts';

const ITEMS = 1000;
const WARMUP = 300;
const SAMPLES = 2000;
const TRANSFORM = '(s) => ({n: s.items.length})';

/**
 * engine.transform_overhead: wall time of one `Sandbox.evaluate` of a trivial transform over a
 * 1 000-item input, end to end (argument copy in, fresh context, call, result copy out).
 *
 * - p50Us / p99Us: evaluations back to back, so each also pays for creating the fresh context that
 *   replaces the one it used;
 * - copyP50Us: host JSON.stringify + JSON.parse of the same arguments, the floor of any deep copy
 *   (reported so the sandbox's own share can be told apart from the cost of copying the input).
 */
export async function benchSandbox(): Promise<void> {
  const sandbox = new Sandbox();
  try {
    const args: JsonValue[] = [
      {
        items: Array.from({ length: ITEMS }, (_, i) => ({
          id: i,
          name: `User ${i}`,
          email: `user${i}@example.com`,
          tags: ['alpha', 'beta', `group-${i % 7}`],
        })),
      },
    ];
    for (let i = 0; i < WARMUP; i++) await sandbox.evaluate(TRANSFORM, args);
    const backToBack = await sample(SAMPLES, () => sandbox.evaluate(TRANSFORM, args));
    const copy = await sample(SAMPLES, async () => JSON.parse(JSON.stringify(args)));
    process.stdout.write(
      `${JSON.stringify({
        bench: 'engine.transform_overhead',
        items: ITEMS,
        p50Us: quantile(backToBack, 0.5),
        p99Us: quantile(backToBack, 0.99),
        copyP50Us: quantile(copy, 0.5),
      })}\n`,
    );
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
