/** Percentile of a sample (nearest rank); the input need not be sorted. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export const round = (value: number, digits = 3) => Number(value.toFixed(digits));

/** One benchmark figure: a JSON line on stdout. Progress goes to stderr. */
export function emit(figure: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(figure)}\n`);
}

export function progress(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

/** `count` pairs of samples taken in turn, so that load from elsewhere falls on both alike. */
export async function interleaved(
  count: number,
  via: () => Promise<unknown>,
  direct: () => Promise<unknown>,
): Promise<{ via: number[]; direct: number[] }> {
  const samples = { via: [] as number[], direct: [] as number[] };
  for (let i = 0; i < count; i++) {
    samples.via.push(await timed(via));
    samples.direct.push(await timed(direct));
  }
  return samples;
}

/**
 * What a path costs over the direct one, from interleaved samples: `<name>P50Ms` and `<name>P99Ms`,
 * `directP50Ms` and `directP99Ms`, `overheadP50Ms` and `ratio` (of the p50s).
 */
export function overheadFigures(
  name: string,
  samples: { via: number[]; direct: number[] },
): Record<string, number> {
  const viaP50 = percentile(samples.via, 50);
  const directP50 = percentile(samples.direct, 50);
  return {
    [`${name}P50Ms`]: round(viaP50),
    [`${name}P99Ms`]: round(percentile(samples.via, 99)),
    directP50Ms: round(directP50),
    directP99Ms: round(percentile(samples.direct, 99)),
    overheadP50Ms: round(viaP50 - directP50),
    ratio: round(viaP50 / directP50, 2),
  };
}

/** How long a step bench measures: sequential calls for the p50, then a rate at a concurrency for a time. */
export const STEP_BENCH = { calls: 2_000, concurrency: 32, throughputMs: 10_000 } as const;

/**
 * A one-step run through the engine worker pool beside the same call made directly from this process, as
 * the protocol benches report it: `<protocol>.<operation>_step_overhead`, the added p50 of `calls`
 * sequential runs interleaved with direct calls, and `<protocol>.<operation>_step_throughput`, the rate at
 * `concurrency` for `throughputMs` against the direct rate (`rateKey`); the sizes are STEP_BENCH's. Warm
 * both up first.
 */
export async function stepAgainstDirect(bench: {
  protocol: string;
  operation: string;
  viaPool: () => Promise<unknown>;
  direct: { call: () => Promise<unknown>; name: string; rateKey: string };
  workers: number;
}): Promise<void> {
  const { protocol, operation, viaPool, direct } = bench;
  const { calls, concurrency, throughputMs } = STEP_BENCH;
  progress(`${protocol}: ${calls} sequential one-step runs vs direct ${direct.name}, interleaved`);
  emit({
    bench: `${protocol}.${operation}_step_overhead`,
    calls,
    ...overheadFigures('pool', await interleaved(calls, viaPool, direct.call)),
    targetOverheadP50Ms: 0.5,
  });

  progress(`${protocol}: throughput at concurrency ${concurrency} for ${throughputMs / 1000} s each`);
  const runsPerSec = await throughput(viaPool, concurrency, throughputMs);
  const directPerSec = await throughput(direct.call, concurrency, throughputMs);
  emit({
    bench: `${protocol}.${operation}_step_throughput`,
    concurrency,
    workers: bench.workers,
    runsPerSec: round(runsPerSec, 0),
    [direct.rateKey]: round(directPerSec, 0),
    ratio: round(runsPerSec / directPerSec, 3),
    targetRatio: 0.3,
  });
}

export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** Runs `fn` from `concurrency` loops for `ms`; returns completions per second. */
export async function throughput(
  fn: () => Promise<unknown>,
  concurrency: number,
  ms: number,
): Promise<number> {
  let done = 0;
  const end = performance.now() + ms;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await fn();
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}
