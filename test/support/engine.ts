import { defaultEngineSettings, defaultPoolSettings } from '../../config/config.ts';
import { createEngineDeps } from '../../engine/deps.ts';
import { closeHttpAgent } from '../../engine/protocols/http.ts';
import type { EngineDeps } from '../../engine/types.ts';
import { type PoolOptions, WorkerPool } from '../../engine/worker/pool.ts';
import { useStarted } from './fixture.ts';

/** The real engine's dependencies (sandbox, protocols) for the tests of the enclosing block, closed after them. */
export function useEngineDeps(): { deps: EngineDeps } {
  return useStarted(
    () => createEngineDeps(defaultEngineSettings()),
    async ({ sandbox }) => {
      sandbox.dispose();
      await closeHttpAgent();
    },
  );
}

/** A started worker pool: the default settings, changed by `options`. */
export async function startWorkerPool(options: Partial<PoolOptions> = {}): Promise<WorkerPool> {
  const pool = new WorkerPool({ ...defaultPoolSettings(), ...options });
  await pool.start();
  return pool;
}

/** A started worker pool (see startWorkerPool) for the tests of the enclosing block, closed after them. */
export function useWorkerPool(options: Partial<PoolOptions> = {}): WorkerPool {
  return useStarted(
    () => startWorkerPool(options),
    (pool) => pool.close(),
  );
}
