import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';

/**
 * Every live container's process group, killed when this process ends: synchronously on a normal
 * exit, and by a detached watchdog process when we die without running exit handlers (SIGKILL,
 * a crashed test worker). The watchdog reads "+pgid"/"-pgid" lines on stdin and kills every group
 * it still holds once the pipe closes, which the OS does when we die, however we die.
 */
const liveGroups = new Set<number>();
let watchdog: ChildProcess | undefined;

const WATCHDOG = `
const groups = new Set();
let buffered = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffered += chunk;
  let newline;
  while ((newline = buffered.indexOf('\\n')) >= 0) {
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    const pgid = Number(line.slice(1));
    if (line[0] === '+') groups.add(pgid); else groups.delete(pgid);
  }
});
const killAll = () => {
  for (const pgid of groups) { try { process.kill(-pgid, 'SIGKILL'); } catch {} }
  process.exit(0);
};
process.stdin.on('end', killAll);
process.stdin.on('close', killAll);
process.stdin.on('error', killAll);
`;

function tellWatchdog(line: string): void {
  if (!watchdog) {
    // Its own process group, so a Ctrl-C aimed at the test run does not kill it before it acts.
    watchdog = spawn(process.execPath, ['-e', WATCHDOG], {
      stdio: ['pipe', 'ignore', 'ignore'],
      detached: true,
    });
    watchdog.unref();
    const stdin = watchdog.stdin as unknown as { unref?: () => void } | null;
    stdin?.unref?.();
    watchdog.stdin?.on('error', () => {});
    process.on('exit', () => {
      for (const pgid of liveGroups) killGroup(pgid, 'SIGKILL');
    });
  }
  watchdog.stdin?.write(`${line}\n`);
}

function killGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** How a container process ended. `exitCode` follows the runtime convention: 128 + n for signal n. */
export interface ProcessExit {
  exitCode: number;
  signal?: NodeJS.Signals;
  /** Set when the process could not be started at all (exitCode 128, like a runtime StartError). */
  startError?: Error;
}

const SIGNAL_NUMBERS: Partial<Record<NodeJS.Signals, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGABRT: 6,
  SIGKILL: 9,
  SIGSEGV: 11,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
};

export interface SpawnOptions {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  /** stdout and stderr both go here, appended, as one interleaved stream like a container log. */
  logFile: string;
}

/**
 * One container: a child process leading its own process group, so signals reach everything it
 * started, and when it exits, whatever it left behind is killed, as a runtime tears down a
 * container's PID namespace.
 */
export class ContainerProcess {
  readonly pid: number;
  readonly exited: Promise<ProcessExit>;
  #done = false;

  constructor(options: SpawnOptions) {
    const [command = '', ...args] = options.argv;
    if (!existsSync(options.cwd)) {
      // spawn() would blame the command ("spawn sh ENOENT"); say what the runtime says instead.
      this.pid = 0;
      this.#done = true;
      const error = new Error(`chdir to cwd ("${options.cwd}") failed: no such file or directory`);
      this.exited = Promise.resolve({ exitCode: 128, startError: error });
      return;
    }
    const log = openSync(options.logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(command, args, {
        cwd: options.cwd,
        env: options.env,
        stdio: ['ignore', log, log],
        detached: true,
      });
    } finally {
      closeSync(log);
    }
    this.pid = child.pid ?? 0;
    if (this.pid) {
      liveGroups.add(this.pid);
      tellWatchdog(`+${this.pid}`);
    }
    this.exited = new Promise((resolve) => {
      child.once('error', (error) => {
        if (this.pid) return; // Errors after a successful spawn (a failed kill) are not exits.
        this.#done = true;
        resolve({ exitCode: 128, startError: error });
      });
      child.once('exit', (code, signal) => {
        this.#done = true;
        if (this.pid) {
          killGroup(this.pid, 'SIGKILL');
          liveGroups.delete(this.pid);
          tellWatchdog(`-${this.pid}`);
        }
        const exitCode = code ?? 128 + (signal ? (SIGNAL_NUMBERS[signal] ?? 0) : 0);
        resolve(signal ? { exitCode, signal } : { exitCode });
      });
    });
  }

  get running(): boolean {
    return !this.#done && this.pid !== 0;
  }

  /** Signals the whole process group; false when it is already gone. */
  kill(signal: NodeJS.Signals): boolean {
    return this.running && killGroup(this.pid, signal);
  }
}
