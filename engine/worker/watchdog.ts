/**
 * Ends a pool worker that can no longer end itself: its API process is gone, or its main thread is
 * stuck.
 *
 * A healthy worker leaves on its own: IPC 'disconnect' fires and it shuts down. But 'disconnect' is an
 * event of the main thread's loop, and that thread can be stuck: after isolated-vm's "Catastrophic
 * out-of-memory … Script failed to terminate" (e.g. a transform growing an object without bound under
 * a small memory limit) it blocks for good, the worker's runs never end, and it ignored SIGTERM and
 * outlived a killed API. Node has no parent-death signal (prctl PR_SET_PDEATHSIG), so a small thread
 * of its own watches, every `intervalMs`:
 * - the parent process id: when it changes (the parent died, the process was re-parented), the main
 *   thread gets `graceMs` to shut down properly, then the thread SIGKILLs the process;
 * - a counter the main thread's loop increments: when it has not moved for `stallChecks` checks in a
 *   row, the process is SIGKILLed (the pool then fails its runs and starts another worker).
 * SIGKILL needs nothing of the stuck thread. The thread costs about 7 MiB (PSS) per idle worker.
 */
import { Worker } from 'node:worker_threads';

export interface WorkerWatchdogOptions {
  /** How often the parent and the main thread are checked. */
  intervalMs?: number;
  /** How long the main thread gets to leave by itself once the parent is gone. */
  graceMs?: number;
  /** Checks in a row without a sign of life from the main thread before the process is ended. */
  stallChecks?: number;
}

// Plain CommonJS: an eval'd worker loads nothing but this. process.ppid is read anew on every access.
// Stalls are counted in checks, not wall time: a process stopped as a whole (SIGSTOP, a suspended VM)
// stops this thread too, and is not mistaken for a stuck one when it resumes.
const WATCHDOG_SOURCE = `
const { writeSync } = require('node:fs');
const { workerData } = require('node:worker_threads');
const { parentPid, beat, intervalMs, graceMs, stallChecks } = workerData;
function end(why) {
  try { writeSync(2, 'kubeglue worker ' + process.pid + ': ' + why + '; ending the process\\n'); } catch {}
  process.kill(process.pid, 'SIGKILL');
}
let orphaned = false;
let seen = Atomics.load(beat, 0);
let still = 0;
setInterval(() => {
  if (!orphaned && process.ppid !== parentPid) {
    orphaned = true;
    setTimeout(() => end('its API process is gone'), graceMs);
  }
  const now = Atomics.load(beat, 0);
  if (now !== seen) {
    seen = now;
    still = 0;
  } else if (++still >= stallChecks) {
    end('its main thread has been stuck for ' + still + ' checks of ' + intervalMs + ' ms');
  }
}, intervalMs);
`;

/** Starts the watchdog thread and the main thread's sign of life; neither keeps the process alive. */
export function startWorkerWatchdog(options: WorkerWatchdogOptions = {}): Worker {
  const intervalMs = options.intervalMs ?? 1_000;
  const beat = new Int32Array(new SharedArrayBuffer(4));
  setInterval(() => Atomics.add(beat, 0, 1), intervalMs).unref();
  const watchdog = new Worker(WATCHDOG_SOURCE, {
    eval: true,
    // The parent as this process knows it now: one that died before the thread starts is noticed too.
    workerData: {
      parentPid: process.ppid,
      beat,
      intervalMs,
      graceMs: options.graceMs ?? 2_000,
      stallChecks: options.stallChecks ?? 15,
    },
    // The thread needs almost nothing; its heap limit keeps it that way.
    resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1 },
  });
  // Its own failure (it cannot start) must not crash the worker: the worker then runs unwatched.
  watchdog.on('error', (error) => process.emitWarning(`worker watchdog stopped: ${error.message}`));
  watchdog.unref();
  return watchdog;
}
