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
