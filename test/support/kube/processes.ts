import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, rmSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isAlive } from '../os.ts';

/** A child process whose stdout and stderr go to a log file. */
export interface Component {
  name: string;
  logPath: string;
  child: ChildProcess;
  /** Resolves with the exit code (or signal) once the process is gone. */
  exited: Promise<string>;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
const tempDirs = new Set<string>();
let handlersInstalled = false;

/**
 * A crashed or killed test run must not leave an API server and etcd behind. The exit/signal handlers
 * cover orderly exits; PR_SET_PDEATHSIG (via util-linux setpriv, when present) covers SIGKILL of the runner.
 */
function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', killEverythingNow);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killEverythingNow();
      // Keep the default "die on signal" behaviour unless someone else (e.g. vitest) handles the signal.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
}

function killEverythingNow(): void {
  for (const child of live) child.kill('SIGKILL');
  live.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

/** Removes dir when the test process exits, should nobody call stop(). */
export function removeOnExit(dir: string): () => void {
  installExitHandlers();
  tempDirs.add(dir);
  return () => tempDirs.delete(dir);
}

const OWNER_FILE = 'owner.json';

/** Records which process owns tempDir (and the other dirs listed), for sweepAbandonedDirs. */
export async function claimDirs(tempDir: string, others: string[]): Promise<void> {
  await writeFile(join(tempDir, OWNER_FILE), JSON.stringify({ pid: process.pid, dirs: others }));
}

/**
 * A SIGKILLed test run cannot clean up after itself; its etcd data would stay in /dev/shm (RAM) for good.
 * Removes the dirs of runs whose owning process is gone. Dirs of live runs, and dirs not yet claimed, stay.
 */
export async function sweepAbandonedDirs(parent: string, prefix: string): Promise<void> {
  const names = await readdir(parent).catch(() => []);
  for (const name of names.filter((entry) => entry.startsWith(prefix))) {
    const dir = join(parent, name);
    let owner: { pid?: unknown; dirs?: unknown };
    try {
      owner = JSON.parse(await readFile(join(dir, OWNER_FILE), 'utf8'));
    } catch {
      continue;
    }
    if (typeof owner.pid !== 'number' || isAlive(owner.pid)) continue;
    const others = Array.isArray(owner.dirs)
      ? owner.dirs.filter((d): d is string => typeof d === 'string')
      : [];
    await Promise.all([dir, ...others].map((d) => rm(d, { recursive: true, force: true })));
  }
}

let pdeathsig: boolean | undefined;
function hasPdeathsig(): boolean {
  if (pdeathsig === undefined) {
    pdeathsig =
      process.platform === 'linux' &&
      spawnSync('setpriv', ['--pdeathsig', 'KILL', '--', 'true'], { stdio: 'ignore' }).status === 0;
  }
  return pdeathsig;
}

export function startComponent(name: string, binary: string, args: string[], logPath: string): Component {
  installExitHandlers();
  const log = openSync(logPath, 'a');
  const [file, argv] = hasPdeathsig()
    ? ['setpriv', ['--pdeathsig', 'KILL', '--', binary, ...args]]
    : [binary, args];
  let child: ChildProcess;
  try {
    child = spawn(file, argv, { stdio: ['ignore', log, log], detached: false });
  } finally {
    closeSync(log);
  }
  live.add(child);
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve(signal ?? `exit code ${code}`);
    });
    child.once('error', (error) => {
      live.delete(child);
      resolve(error.message);
    });
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  return { name, logPath, child, exited, stop };
}

export async function logTail(path: string, lines = 30): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/**
 * Polls probe until it returns true; fails early with the component's log tail when the process dies,
 * so a bad flag shows up as its error message and not as a timeout.
 */
export async function waitUntilReady(
  component: Component,
  probe: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let died: string | undefined;
  void component.exited.then((how) => {
    died = how;
  });
  for (;;) {
    if (died !== undefined) throw await startFailure(component, `exited (${died}) before it was ready`);
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw await startFailure(component, `not ready after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export class ComponentStartError extends Error {
  readonly log: string;
  constructor(message: string, log: string) {
    super(message);
    this.name = 'ComponentStartError';
    this.log = log;
  }
}

async function startFailure(component: Component, what: string): Promise<ComponentStartError> {
  const tail = await logTail(component.logPath);
  return new ComponentStartError(`${component.name} ${what}; the last lines of its log:\n${tail}`, tail);
}
