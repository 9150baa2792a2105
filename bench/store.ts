import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import {
  embeddedStorePath,
  type FinishRun,
  type ListRunsFilter,
  openStore,
  type RunStatus,
  type Store,
  type StoredRun,
} from '../store/index.ts';
import { createTestDatabase, startTestPostgres } from '../test/support/postgres.ts';

const RUNS = 100_000;
const SINGLE_INSERTS = 1_000;
const LIST_SAMPLES_PER_FILTER = 25;
const GROUP_COMMIT_RUNS = 20_000;
const UNBATCHED_RUNS = 2_000;
const GROUP_COMMIT_CONCURRENCY = 32;

/** Filters as GET /v1/runs receives them; pages vary per sample (1..5) like a user paging. */
const FILTERS: Record<string, Omit<ListRunsFilter, 'page' | 'limit'>> = {
  none: {},
  status: { status: 'running' },
  toolId: { toolId: 'tool-3' },
  requestSources: { requestSources: ['webhook', 'tool-chain'] },
  userId: { userId: 'user-42' },
  systemId: { systemId: 'sys-7' },
  toolRestriction: { toolIds: ['tool-1', 'tool-2', 'tool-9'] },
  combination: { toolId: 'tool-1', status: 'success', requestSources: ['api', 'webhook'] },
};

function log(message: string): void {
  process.stderr.write(`bench store: ${message}\n`);
}

function seedRuns(count: number, prefix: string): StoredRun[] {
  let state = 7;
  const random = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
  const sources = ['api', 'api', 'frontend', 'mcp', 'cli', 'webhook', 'tool-chain', 'scheduler'];
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  return Array.from({ length: count }, (_, i) => {
    const startedMs = start + Math.floor(random() * 30 * 86_400_000);
    const roll = random();
    const status: RunStatus =
      roll < 0.6 ? 'success' : roll < 0.8 ? 'failed' : roll < 0.9 ? 'aborted' : 'running';
    const run: StoredRun = {
      runId: `${prefix}-${i}`,
      toolId: `tool-${Math.floor(random() ** 2 * 40)}`,
      status,
      requestSource: sources[Math.floor(random() * sources.length)] ?? 'api',
      userId: `user-${Math.floor(random() * 300)}`,
      systemIds: random() < 0.5 ? [] : [`sys-${Math.floor(random() * 25)}`],
      toolPayload: { customerId: i, query: 'status:open', limit: 50 },
      options: { async: status === 'running' },
      metadata: { startedAt: new Date(startedMs).toISOString() },
    };
    if (status !== 'running') {
      run.metadata.completedAt = new Date(startedMs + 1_500).toISOString();
      run.metadata.durationMs = 1_500;
    }
    return run;
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const value = sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  return Math.round(value * 100) / 100;
}

async function measure(store: Store, driver: string, beforeLists?: () => Promise<void>): Promise<void> {
  const runs = seedRuns(RUNS, 'bench');
  log(`${driver}: inserting ${RUNS} runs`);
  let started = performance.now();
  await store.insertRuns(runs);
  const insertsPerSec = Math.round(RUNS / ((performance.now() - started) / 1000));

  log(`${driver}: ${SINGLE_INSERTS} single idempotent inserts`);
  const singles = seedRuns(SINGLE_INSERTS, 'single');
  started = performance.now();
  for (const run of singles) await store.insertRun(run, { inputHash: 'h' });
  const singleInsertsPerSec = Math.round(SINGLE_INSERTS / ((performance.now() - started) / 1000));

  await beforeLists?.();
  log(`${driver}: listing`);
  const byFilter: Record<string, number> = {};
  const all: number[] = [];
  for (const [name, filter] of Object.entries(FILTERS)) {
    const samples: number[] = [];
    for (let i = 0; i < LIST_SAMPLES_PER_FILTER; i++) {
      const t = performance.now();
      await store.listRuns({ ...filter, page: (i % 5) + 1, limit: 50 });
      samples.push(performance.now() - t);
    }
    byFilter[name] = median(samples);
    all.push(...samples);
  }
  process.stdout.write(
    `${JSON.stringify({
      bench: 'store.runs',
      driver,
      runs: RUNS,
      insertsPerSec,
      singleInsertsPerSec,
      listP50Ms: median(all),
      listP50MsByFilter: byFilter,
    })}\n`,
  );
}

/** The terminal write of a sync run: one step result, the result, no files. */
function finishOf(index: number, startedAt: string): FinishRun {
  const data = { customerId: index, status: 'open', items: [{ id: index, total: 12.5 }] };
  return {
    status: 'success',
    completedAt: new Date(Date.parse(startedAt) + 40).toISOString(),
    durationMs: 40,
    stepResults: [{ stepId: 'fetch', success: true, data }],
    result: { success: true, data },
  };
}

type RunWrites = Pick<Store, 'insertRun' | 'finishRun'>;

/** Runs per second when `concurrency` callers each insert a run and then write its terminal state. */
async function runsPerSecond(writes: RunWrites, prefix: string, count: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: GROUP_COMMIT_CONCURRENCY }, async () => {
      for (let index = next++; index < count; index = next++) {
        const startedAt = new Date().toISOString();
        const run: StoredRun = {
          runId: `${prefix}-${index}`,
          toolId: 'tool-1',
          status: 'running',
          requestSource: 'api',
          systemIds: [],
          toolPayload: { customerId: index },
          options: { async: false },
          executor: 'bench',
          metadata: { startedAt },
        };
        const inserted = await writes.insertRun(run, { inputHash: `hash-${index}` });
        if (inserted.status !== 'inserted') throw new Error(`run ${run.runId} was not inserted`);
        if (!(await writes.finishRun(run.runId, finishOf(index, startedAt)))) {
          throw new Error(`run ${run.runId} was not finished`);
        }
      }
    }),
  );
  return Math.round(count / ((performance.now() - started) / 1000));
}

/**
 * store.group_commit: sync-run writes (insert running, then the terminal write with a step result and the
 * result) for 20 000 runs by 32 concurrent callers through store.batch; unbatchedRunsPerSec is the same for
 * 2 000 runs through the plain one-run queries, for comparison.
 */
async function measureGroupCommit(store: Store, driver: string): Promise<void> {
  log(`${driver}: group commit, ${GROUP_COMMIT_RUNS} runs at concurrency ${GROUP_COMMIT_CONCURRENCY}`);
  const runsPerSec = await runsPerSecond(store.batch, 'gc', GROUP_COMMIT_RUNS);
  log(`${driver}: the same without batching, ${UNBATCHED_RUNS} runs`);
  const unbatchedRunsPerSec = await runsPerSecond(store, 'plain', UNBATCHED_RUNS);
  process.stdout.write(
    `${JSON.stringify({
      bench: 'store.group_commit',
      driver,
      runs: GROUP_COMMIT_RUNS,
      concurrency: GROUP_COMMIT_CONCURRENCY,
      runsPerSec,
      unbatchedRunsPerSec,
    })}\n`,
  );
}

/**
 * store.runs: bulk-insert 100 000 runs (insertsPerSec), 1 000 single idempotent insertRun calls
 * (singleInsertsPerSec), then GET /v1/runs-style pages of 50 with each filter (p50 of 25 calls each, pages 1-5;
 * a call is the page query plus the count). SQLite in a temp dir; pg on a throwaway local server (ANALYZEd
 * after seeding, as autovacuum would do).
 */
export async function benchStore(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-bench-sqlite-'));
  try {
    const store = await openStore({ driver: 'sqlite', path: embeddedStorePath(dataDir) });
    try {
      await measure(store, 'sqlite');
      await measureGroupCommit(store, 'sqlite');
    } finally {
      await store.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }

  let server: Awaited<ReturnType<typeof startTestPostgres>>;
  try {
    server = await startTestPostgres();
  } catch (error) {
    log(`pg skipped: ${error instanceof Error ? error.message : String(error)}`);
    process.stdout.write(
      `${JSON.stringify({ bench: 'store.runs', driver: 'pg', skipped: 'no PostgreSQL server' })}\n`,
    );
    process.stdout.write(
      `${JSON.stringify({ bench: 'store.group_commit', driver: 'pg', skipped: 'no PostgreSQL server' })}\n`,
    );
    return;
  }
  try {
    const database = await createTestDatabase(server.url);
    try {
      const store = await openStore({ driver: 'pg', url: database.url });
      try {
        await measure(store, 'pg', async () => {
          const client = new pg.Client({ connectionString: database.url });
          await client.connect();
          await client.query('ANALYZE runs');
          await client.end();
        });
        await measureGroupCommit(store, 'pg');
      } finally {
        await store.close();
      }
    } finally {
      await database.drop();
    }
  } finally {
    await server.stop();
  }
}

if (import.meta.main) await benchStore();
