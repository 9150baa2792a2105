/**
 * `npm run bench -- dispatch`: api.async_dispatch alone (bench/async-dispatch.ts; the `api` bench prints it
 * too, among its long phases) on the embedded server, started as the other benches start it.
 */
import { ADMIN_KEY, createBenchTools, startBenchServer } from './api.ts';
import { DISPATCH_RUNS, measureDispatch } from './async-dispatch.ts';
import { emit, progress } from './stats.ts';

export async function benchDispatch(): Promise<void> {
  const { target, server, call, stop } = await startBenchServer('dispatch');
  try {
    await createBenchTools(call, target.url);
    progress(`dispatch: ${DISPATCH_RUNS} async runs of the one-step tool, one at a time`);
    emit({
      bench: 'api.async_dispatch',
      driver: 'embedded',
      ...(await measureDispatch(`${server.url}/v1`, ADMIN_KEY, call, DISPATCH_RUNS)),
    });
  } finally {
    await stop();
  }
}

if (import.meta.main) await benchDispatch();
