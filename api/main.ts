/**
 * `npm start`: the embedded deployment in one process: the HTTP API, the store (PGlite in
 * KUBEGLUE_DATA_DIR, or Postgres at KUBEGLUE_DATABASE_URL) and the engine worker pool.
 */
import { mkdir } from 'node:fs/promises';
import { WorkerPool } from '../runner/pool.ts';
import { openStore, type Store } from '../store/index.ts';
import { loadConfig } from './config.ts';
import { buildServer } from './server.ts';

const log = (line: string) => console.log(`kubeglue: ${line}`);

async function main(): Promise<void> {
  const config = loadConfig();
  let ready = false;

  let store: Store;
  if (config.databaseUrl) {
    log('opening the Postgres store (KUBEGLUE_DATABASE_URL)');
    store = await openStore({ driver: 'pg', url: config.databaseUrl }, { onProgress: log });
  } else {
    await mkdir(config.dataDir, { recursive: true });
    log(`opening the embedded store in ${config.dataDir}`);
    store = await openStore({ driver: 'pglite', dataDir: config.dataDir }, { onProgress: log });
  }

  const pool = new WorkerPool({
    ...(config.workers ? { size: config.workers } : {}),
    sandboxMemoryMb: config.sandboxMemoryMb,
    sandboxTimeoutMs: config.sandboxTimeoutMs,
    log,
  });
  log(`starting ${pool.size} engine workers`);
  await pool.start();

  const app = buildServer({
    bodyLimitBytes: config.bodyLimitBytes,
    logLevel: config.logLevel,
    ready: () => ready,
  });
  const address = await app.listen({ host: config.host, port: config.port });
  ready = true;
  log(`ready on ${address} (OpenAPI: ${address}/v1/openapi.json)`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    ready = false;
    log(`${signal}: shutting down`);
    const force = setTimeout(() => {
      log('shutdown grace period over; exiting');
      process.exit(1);
    }, config.shutdownGraceMs).unref();
    await app.close();
    await pool.close();
    await store.close();
    clearTimeout(force);
    log('stopped');
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error(`kubeglue: failed to start: ${(error as Error).message}`);
  process.exit(1);
});
