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
