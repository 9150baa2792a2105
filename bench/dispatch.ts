/**
 * `npm run bench -- dispatch`: api.async_dispatch alone (bench/async-dispatch.ts; the `api` bench prints it
 * too, among its long phases) on the embedded server, started as the other benches start it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN_KEY, client, createBenchTools, startServer, startTarget } from './api.ts';
import { DISPATCH_RUNS, measureDispatch } from './async-dispatch.ts';
import { emit, progress } from './stats.ts';

export async function benchDispatch(): Promise<void> {
  const target = await startTarget();
  const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-bench-dispatch-'));
  const server = await startServer({ KUBEGLUE_DATA_DIR: dataDir });
  const { agent, call } = client(`${server.url}/v1`);
  try {
    await createBenchTools(call, target.url);
    progress(`dispatch: ${DISPATCH_RUNS} async runs of the one-step tool, one at a time`);
    emit({
      bench: 'api.async_dispatch',
      driver: 'embedded',
      ...(await measureDispatch(`${server.url}/v1`, ADMIN_KEY, call, DISPATCH_RUNS)),
    });
  } finally {
    await agent.close();
    await server.stop();
    await target.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) await benchDispatch();
