/**
 * TEST-ONLY stand-in for the API process: starts a real WorkerPool of one worker, prints
 * `{"workerPid": …}` on stdout, runs the transform given as its argument if any and prints
 * `{"status": …, "error": …}`, then waits to be killed (pool-stop.test.ts SIGKILLs it).
 *   node pool-host.ts [transformCode]
 */
import { defaultPoolSettings } from '../../config/config.ts';
import { WorkerPool } from '../../engine/worker/pool.ts';
import { runOrder } from './run-order.ts';

const transformCode = process.argv[2];
const pool = new WorkerPool({
  ...defaultPoolSettings(),
  workers: 1,
  workerHeapMb: 256,
  sandboxMemoryMb: 32,
  sandboxTimeoutMs: 60_000,
});
await pool.start();
process.stdout.write(`${JSON.stringify({ workerPid: pool.workerPids()[0] })}\n`);
if (transformCode !== undefined) {
  const result = await pool.run(
    runOrder({ id: 'host', steps: [{ id: 't', config: { type: 'transform', transformCode } }] }),
  );
  process.stdout.write(`${JSON.stringify({ status: result.status, error: result.error })}\n`);
}
setInterval(() => {}, 60_000);
