/**
 * budget.*: what a System's rate budget costs a request (docs/operations.md).
 * - budget.unlimited_check: a system without a rateLimit; the check each request makes (the engine finds
 *   no rateLimit in the order, so it asks nothing), per request, beside a direct GET of the same target.
 * - budget.per_request: a 50-page run through the worker pool against a system without a rateLimit, and
 *   against one with a budget too large to wait on (each request asks the API process over IPC, which
 *   takes from the store: SQLite in a temp dir), per request, beside a direct GET; interleaved rounds.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { defaultPoolSettings } from '../config/config.ts';
import type { ResolvedSystem, RunOrder } from '../contract/wire/run-order.ts';
import { requestBudget } from '../engine/budget.ts';
import { WorkerPool } from '../engine/worker/pool.ts';
import { embeddedStorePath, openStore } from '../store/index.ts';
import { SystemBudgets } from '../systems/budgets.ts';
import { runOrder } from '../test/support/run-order.ts';
import { emit, percentile, progress, round, timed } from './stats.ts';
import { startJsonTarget } from './target.ts';

const PAGES = 50;
const ROUNDS = 20;
const CHECKS = 1_000_000;

function pagedOrder(targetUrl: string, system: ResolvedSystem): RunOrder {
  return runOrder(
    {
      id: 'budget-bench',
      steps: [
        {
          id: 'list',
          config: {
            systemId: system.id,
            url: '/items',
            queryParams: { page: '<<page>>' },
            pagination: { type: 'pageBased', pageSize: 1, stopCondition: `(r, p) => p.page >= ${PAGES}` },
          },
        },
      ],
    },
    { runId: `budget-bench-${system.id}`, systems: [{ ...system, url: targetUrl }] },
  );
}

export async function benchBudget(): Promise<void> {
  const target = await startJsonTarget((url) =>
    JSON.stringify([{ page: Number(url.searchParams.get('page')) }]),
  );
  const agent = new Agent({ connections: 4 });
  const directGet = async () =>
    (await request(`${target.url}/items?page=1`, { dispatcher: agent })).body.json();
  const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-bench-budget-'));
  const store = await openStore({ driver: 'sqlite', path: embeddedStorePath(dataDir) });
  const pool = new WorkerPool({ ...defaultPoolSettings(), workers: 1 });
  try {
    const unlimited: ResolvedSystem = { id: 'free', credentials: {} };
    const limited: ResolvedSystem = {
      id: 'limited',
      credentials: {},
      rateLimit: { requestsPerSecond: 100_000 },
    };

    progress(`budget: ${CHECKS} checks of a system without a rateLimit`);
    let made = 0;
    const checkMs = await timed(async () => {
      for (let i = 0; i < CHECKS; i++) {
        if (requestBudget(undefined, unlimited, () => {}) === undefined) made++;
      }
    });
    const directSamples: number[] = [];
    for (let i = 0; i < 500; i++) directSamples.push(await timed(directGet));
    emit({
      bench: 'budget.unlimited_check',
      checks: made,
      perRequestUs: round((checkMs * 1000) / CHECKS, 4),
      directGetP50Us: round(percentile(directSamples, 50) * 1000, 1),
      targetPerRequestUs: 20,
    });

    const budgets = new SystemBudgets({
      store,
      budgetOf: async (systemId) =>
        systemId === limited.id ? { key: 'bench-limited', limit: limited.rateLimit ?? {} } : undefined,
      slotPollMs: 50,
    });
    await pool.start();
    const run = async (system: ResolvedSystem) => {
      const result = await pool.run(pagedOrder(target.url, system), { budget: budgets.forRun('prod') });
      if (result.status !== 'success') throw new Error(`budget bench run failed: ${result.error}`);
    };
    progress(`budget: ${ROUNDS} rounds of ${PAGES}-page runs, unlimited / limited / direct, interleaved`);
    for (let i = 0; i < 3; i++) {
      await run(unlimited);
      await run(limited);
    }
    const samples = { unlimited: [] as number[], limited: [] as number[], direct: [] as number[] };
    for (let i = 0; i < ROUNDS; i++) {
      samples.unlimited.push((await timed(() => run(unlimited))) / PAGES);
      samples.limited.push((await timed(() => run(limited))) / PAGES);
      samples.direct.push(
        (await timed(async () => {
          for (let page = 0; page < PAGES; page++) await directGet();
        })) / PAGES,
      );
    }
    const p50 = (values: number[]) => round(percentile(values, 50) * 1000, 0);
    emit({
      bench: 'budget.per_request',
      pages: PAGES,
      rounds: ROUNDS,
      unlimitedP50Us: p50(samples.unlimited),
      limitedP50Us: p50(samples.limited),
      directP50Us: p50(samples.direct),
      limitedOverUnlimitedUs: p50(samples.limited) - p50(samples.unlimited),
      store: 'sqlite',
    });
  } finally {
    await pool.close();
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
    await agent.close();
    await target.stop();
  }
}
