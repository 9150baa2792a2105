/**
 * The proof of systems' rate budgets: two API processes on one Postgres, each with its own engine worker
 * processes, run many paginated runs at once against a target that counts the requests it receives in
 * each second. The budget is the store's, so the target sees the System's rateLimit in each second (one
 * more at most, where the scheduling of the processes between the send and the target's clock carries an
 * arrival across a second's boundary), no run fails, and the whole takes about what the rate allows
 * (within 20 % of the ideal).
 *
 * The issue's numbers (100 runs × 10 pages at 20 requests/s: 50 s of ideal time) unless
 * KUBEGLUE_BUDGET_PROOF_RUNS says fewer runs (a quick local check).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { useTestDatabase } from '../../support/database.ts';
import {
  callApi,
  type ServerProcess,
  startServerProcess,
  TEST_ADMIN_KEY,
  testServerEnv,
} from '../../support/embedded.ts';
import { type RateTarget, startRateTarget } from '../../support/rate-target.ts';

const RUNS = Number(process.env.KUBEGLUE_BUDGET_PROOF_RUNS ?? 100);
const PAGES = 10;
const RATE = 20;
const IDEAL_MS = ((RUNS * PAGES - 1) / RATE) * 1000;
/** Requests a second's count may exceed RATE by at the target: see the test. */
const SLACK = 1;

const database = useTestDatabase();
const replicas: ServerProcess[] = [];
const dirs: string[] = [];
let target: RateTarget;

async function replica(name: string): Promise<ServerProcess> {
  const dir = await mkdtemp(join(tmpdir(), `kubeglue-${name}-`));
  dirs.push(dir);
  const server = await startServerProcess(
    testServerEnv(dir, {
      KUBEGLUE_DATABASE_URL: database.url,
      KUBEGLUE_POD_NAME: name,
      KUBEGLUE_MAX_SYNC_RUNS: String(RUNS),
      KUBEGLUE_WORKERS: '2',
    }),
  );
  replicas.push(server);
  return server;
}

const call = <T>(server: ServerProcess, method: string, path: string, body?: unknown) =>
  callApi<T>(server.url, TEST_ADMIN_KEY, method, path, body);

beforeAll(async () => {
  target = await startRateTarget();
  const first = await replica('api-first');
  await call(first, 'POST', '/v1/systems', {
    id: 'limited',
    url: target.url,
    rateLimit: { requestsPerSecond: RATE },
  });
  await call(first, 'POST', '/v1/tools', {
    id: 'ten-pages',
    steps: [
      {
        id: 'pages',
        config: {
          systemId: 'limited',
          url: '/items',
          queryParams: { page: '<<page>>' },
          pagination: {
            type: 'pageBased',
            pageSize: 1,
            stopCondition: `(response, pageInfo) => pageInfo.page >= ${PAGES}`,
          },
        },
      },
    ],
  });
  // Started after the system and tool exist, so its caches hold them from the start.
  await replica('api-second');
}, 120_000);

afterAll(async () => {
  await Promise.all(
    replicas.map(async (server) => {
      server.child.kill('SIGTERM');
      await server.exited;
    }),
  );
  await target?.stop();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Requests per second: counted from the first one, and by the wall clock's seconds (the busiest). */
function busiestSecond(times: readonly number[]): { fromFirst: number[]; byClock: number } {
  const start = Math.min(...times);
  const fromFirst: number[] = [];
  const byClock = new Map<number, number>();
  for (const at of times) {
    const second = Math.floor((at - start) / 1000);
    fromFirst[second] = (fromFirst[second] ?? 0) + 1;
    byClock.set(Math.floor(at / 1000), (byClock.get(Math.floor(at / 1000)) ?? 0) + 1);
  }
  return { fromFirst: Array.from(fromFirst, (n) => n ?? 0), byClock: Math.max(...byClock.values()) };
}

describe("a system's rate budget across two API processes on one Postgres", () => {
  it(
    `${RUNS} concurrent runs of a ${PAGES}-page tool send the target ${RATE} requests a second (one more where an arrival crosses a second's boundary), none fails, in about the ideal time`,
    async () => {
      const [first, second] = replicas as [ServerProcess, ServerProcess];
      const started = Date.now();
      const runs = await Promise.all(
        Array.from({ length: RUNS }, (_, index) =>
          call<Run>(index % 2 === 0 ? first : second, 'POST', '/v1/tools/ten-pages/run', {}),
        ),
      );
      const tookMs = Date.now() - started;

      const failed = runs.filter((run) => run.body.status !== 'success');
      expect(failed.map((run) => run.body.error ?? run.text)).toEqual([]);
      const arrivals = await target.arrivals();
      const { fromFirst, byClock } = busiestSecond(arrivals);
      const report = `per second: ${fromFirst.join(' ')}; took ${tookMs} ms, ideal ${IDEAL_MS} ms`;
      console.log(`rate budget proof: ${report}; busiest wall-clock second: ${byClock}`);
      expect(arrivals).toHaveLength(RUNS * PAGES);
      // The store grants at most RATE a second, and a request that could not go on time takes a new turn
      // (engine/budget.ts). What still moves an arrival is the scheduling between the send and the
      // target's clock (both processes on a loaded machine), which can carry one request across a second's
      // boundary into its neighbour: that is all the slack allowed, never a burst of late requests.
      // Counted in the target's clock seconds, as a fixed-window limiter counts. (Counted from the first
      // arrival, which opens the connection and comes late, the first window also holds the turns that
      // passed it: printed, not judged.)
      expect(byClock, report).toBeLessThanOrEqual(RATE + SLACK);
      expect(tookMs, report).toBeLessThanOrEqual(IDEAL_MS * 1.2);
    },
    IDEAL_MS * 3 + 60_000,
  );
});
