/**
 * TEST-ONLY preload for real pool workers, to make one's main thread stuck without the sandbox (the
 * catastrophic isolated-vm failure that does it in production cannot be triggered reliably):
 *
 *   process.env.NODE_OPTIONS = `--import=${stuckWorkerImport(markerDir)}`; // workers inherit NODE_*
 *   // <markerDir>/<pid>.ready appears once the worker told the pool it is ready;
 *   process.kill(pid, 'SIGUSR2'); // <pid>.blocked appears, then the main thread blocks for good
 *
 * It acts only in a forked child's main thread (one with an IPC channel): the pool's workers.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';

const dir = new URL(import.meta.url).searchParams.get('dir');

if (dir !== null && isMainThread && typeof process.send === 'function') {
  const mark = (what: string) => writeFileSync(join(dir, `${process.pid}.${what}`), '');
  const send = process.send.bind(process) as (message: unknown, ...rest: unknown[]) => boolean;
  process.send = ((message: unknown, ...rest: unknown[]) => {
    const sent = send(message, ...rest);
    // The worker sends arrays of messages (engine/worker/ipc.ts).
    const messages: unknown[] = Array.isArray(message) ? message : [message];
    if (messages.some((m) => (m as { type?: unknown } | null)?.type === 'ready')) mark('ready');
    return sent;
  }) as typeof process.send;
  process.on('SIGUSR2', () => {
    mark('blocked');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  });
}

/** The --import value that loads this module with its marker directory. */
export function stuckWorkerImport(markerDir: string): string {
  const url = new URL(import.meta.url);
  url.search = new URLSearchParams({ dir: markerDir }).toString();
  return url.href;
}
