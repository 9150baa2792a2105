/**
 * `npm run bench -- redis`: a one-step tool whose step is a Redis GET (with a small outputTransform, as a
 * real tool has), run by the engine worker pool, beside the same GET sent directly with ioredis from this
 * process, in the same run: the added p50 of sequential runs (interleaved with direct GETs) and the rate at
 * concurrency 32 against the direct rate. Needs redis-server (test/support/redis-server.ts starts one).
 */
import { Redis } from 'ioredis';
import { defaultPoolSettings } from '../config/config.ts';
import type { RunOrder } from '../contract/wire/run-order.ts';
import { WorkerPool } from '../engine/worker/pool.ts';
import { REDIS_PASSWORD, redisServerPath, startRedisServer } from '../test/support/redis-server.ts';
import { runOrder } from '../test/support/run-order.ts';
import { progress, stepAgainstDirect } from './stats.ts';

const VALUE = JSON.stringify({ id: 42, name: 'Ada', roles: ['admin', 'dev'] });

function getOrder(url: string): RunOrder {
  return runOrder(
    {
      id: 'bench-redis-get',
      steps: [
        { id: 'get', config: { url: '/', systemId: 'cache', body: { command: 'GET', args: ['user:42'] } } },
      ],
      outputTransform: '(s) => JSON.parse(s.get.data).name',
    },
    { systems: [{ id: 'cache', url, authType: 'dataStore', credentials: { password: REDIS_PASSWORD } }] },
  );
}

/** redis.get_step_overhead, redis.get_step_throughput. */
export async function benchRedis(): Promise<void> {
  if (!redisServerPath()) {
    progress('redis: skipped, no redis-server (apt-get install redis-server)');
    return;
  }
  const server = await startRedisServer();
  const direct = new Redis({ port: server.port, host: '127.0.0.1', password: REDIS_PASSWORD });
  const pool = new WorkerPool(defaultPoolSettings());
  await pool.start();
  try {
    await direct.set('user:42', VALUE);
    const url = `${server.url}/0`;
    const viaPool = async () => {
      const result = await pool.run(getOrder(url));
      if (result.status !== 'success' || result.data !== 'Ada') {
        throw new Error(`bench run failed: ${result.error ?? JSON.stringify(result.data)}`);
      }
    };
    const directGet = async () => {
      const value = await direct.get('user:42');
      if (JSON.parse(value ?? '{}').name !== 'Ada') throw new Error('direct GET failed');
    };
    progress(`redis: warming up (${pool.size} workers)`);
    for (let i = 0; i < 300; i++) {
      await viaPool();
      await directGet();
    }

    await stepAgainstDirect({
      protocol: 'redis',
      operation: 'get',
      viaPool,
      direct: { call: directGet, name: 'GETs', rateKey: 'directGetsPerSec' },
      workers: pool.size,
    });
  } finally {
    await pool.close();
    direct.disconnect();
    await server.stop();
  }
}

if (import.meta.main) await benchRedis();
