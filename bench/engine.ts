import { Agent, request } from 'undici';
import { defaultPoolSettings } from '../config/config.ts';
import type { RunOrder } from '../contract/wire/run-order.ts';
import { WorkerPool } from '../engine/worker/pool.ts';
import { runOrder } from '../test/support/run-order.ts';
import {
  emit,
  interleaved,
  overheadFigures,
  progress,
  round,
  STEP_BENCH,
  throughput,
  timed,
} from './stats.ts';
import { startJsonTarget } from './target.ts';

const { calls: SEQUENTIAL_CALLS, throughputMs: THROUGHPUT_MS, concurrency: CONCURRENCY } = STEP_BENCH;

/** The bench target: `/items?page=&pages=` answers pages of 100 items, then an empty page. */
function startTarget() {
  const page = (n: number) =>
    JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ id: n * 100 + i, name: `item ${i}` })));
  return startJsonTarget((url) => {
    const pageNo = Number(url.searchParams.get('page'));
    return pageNo <= Number(url.searchParams.get('pages')) ? page(pageNo) : '[]';
  });
}

function getOrder(url: string): RunOrder {
  return runOrder({ id: 'bench', steps: [{ id: 'get', config: { url } }] });
}

async function directGet(agent: Agent, url: string): Promise<void> {
  const response = await request(url, { dispatcher: agent });
  await response.body.json();
}

/** engine.http_step_overhead, engine.pagination_scaling, engine.throughput. */
export async function benchEngine(): Promise<void> {
  const target = await startTarget();
  const agent = new Agent({ connections: 64 });
  const pool = new WorkerPool(defaultPoolSettings());
  await pool.start();
  try {
    const url = `${target.url}/ok`;
    progress(`engine: warming up (${pool.size} workers)`);
    for (let i = 0; i < 300; i++) {
      await pool.run(getOrder(url));
      await directGet(agent, url);
    }

    progress(`engine: ${SEQUENTIAL_CALLS} sequential one-step runs vs direct GETs, interleaved`);
    const viaPool = async () => {
      const result = await pool.run(getOrder(url));
      if (result.status !== 'success') throw new Error(`bench run failed: ${result.error}`);
    };
    emit({
      bench: 'engine.http_step_overhead',
      calls: SEQUENTIAL_CALLS,
      ...overheadFigures('pool', await interleaved(SEQUENTIAL_CALLS, viaPool, () => directGet(agent, url))),
      targetOverheadP50Ms: 0.5,
    });

    const perPage: Record<string, number> = {};
    for (const pages of [10, 100, 1000]) {
      progress(`engine: pagination over ${pages} pages of 100 items`);
      const order = runOrder({
        id: 'paginate',
        steps: [
          {
            id: 'list',
            config: {
              url: `${target.url}/items`,
              queryParams: { page: '<<page>>', pages: String(pages) },
              pagination: { type: 'pageBased', pageSize: '100', maxPages: 5000 },
            },
          },
        ],
      });
      const ms = await timed(async () => {
        const result = await pool.run(order);
        if (
          result.status !== 'success' ||
          !Array.isArray(result.data) ||
          result.data.length !== pages * 100
        ) {
          throw new Error(`pagination bench got ${result.status}: ${result.error ?? ''}`);
        }
      });
      perPage[pages] = round(ms / (pages + 1));
    }
    emit({ bench: 'engine.pagination_scaling', itemsPerPage: 100, msPerPage: perPage });

    progress(`engine: throughput at concurrency ${CONCURRENCY} for ${THROUGHPUT_MS / 1000} s each`);
    const poolRate = await throughput(() => pool.run(getOrder(url)), CONCURRENCY, THROUGHPUT_MS);
    const directRate = await throughput(() => directGet(agent, url), CONCURRENCY, THROUGHPUT_MS);
    emit({
      bench: 'engine.throughput',
      concurrency: CONCURRENCY,
      workers: pool.size,
      poolRunsPerSec: round(poolRate, 0),
      directRequestsPerSec: round(directRate, 0),
    });
  } finally {
    await pool.close();
    await agent.close();
    await target.stop();
  }
}

if (import.meta.main) await benchEngine();
