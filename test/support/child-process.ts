/**
 * A process a test started and owns: everything it printed (stdout and stderr together), its exit, and
 * stop. It is killed when the test process exits, so a failed test leaves no server behind.
 */
import type { ChildProcess } from 'node:child_process';

export interface OwnedProcess {
  child: ChildProcess;
  /** Everything the process printed so far. */
  output(): string;
  /** Its exit code (null when a signal ended it). */
  exited: Promise<number | null>;
  /** SIGTERM (or the given signal), then waits for the exit; at once when it has exited already. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Takes ownership of a child spawned with stdout and stderr piped. */
export function ownProcess(child: ChildProcess): OwnedProcess {
  let output = '';
  const onData = (chunk: Buffer) => {
    output += chunk.toString('utf8');
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  void exited.then(() => process.off('exit', kill));
  return {
    child,
    output: () => output,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
  };
}

/** Sends signal to the process group of a child spawned `detached` (its own group); nothing when it is gone. */
export function signalProcessGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * Stops a server spawned `detached` together with the children it forked: SIGTERM to its process group,
 * SIGKILL after graceMs; resolves when it has exited (at once when it has already).
 */
export async function stopProcessGroup(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    // What it forked may outlive it.
    signalProcessGroup(child, 'SIGKILL');
    return;
  }
  const exited = new Promise((resolve) => child.once('exit', resolve));
  signalProcessGroup(child, 'SIGTERM');
  const killer = setTimeout(() => signalProcessGroup(child, 'SIGKILL'), graceMs);
  await exited;
  clearTimeout(killer);
}

/** Waits for a server being started to answer; stops it and throws when it never does. */
export async function readyOrStopped(ready: () => Promise<void>, stop: () => Promise<void>): Promise<void> {
  try {
    await ready();
  } catch (error) {
    await stop();
    throw error;
  }
}
