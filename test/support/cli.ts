/**
 * The `kubeglue` CLI as a user runs it: bin/kubeglue.mjs (what `npx kubeglue` starts) in a process of its
 * own (the pinned Node, as the tests run), with only the environment given. HOME and XDG_CONFIG_HOME point into a fresh folder unless
 * given, so no config file of the machine is read.
 *
 *   const { code, stdout, stderr } = await runCli(['tools'], { KUBEGLUE_URL: api.url, KUBEGLUE_API_KEY: key });
 *   const cli = startCli(['logs', runId, '--follow'], env); await cli.printed(/Step 'wait' started/); await cli.exited;
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The entry `npx kubeglue` starts (package.json#bin): it turns Node's compile cache on, then loads bin/kubeglue.ts. */
export const KUBEGLUE_BIN = join(import.meta.dirname, '..', '..', 'bin', 'kubeglue.mjs');
/**
 * The folder of that compile cache when NODE_COMPILE_CACHE names none (bin/kubeglue.mjs's default, which
 * cli/node-version.test.ts holds it to); vitest.config.ts gives it to every process of the test run.
 */
export const COMPILE_CACHE_DIR = join(
  import.meta.dirname,
  '..',
  '..',
  'node_modules',
  '.cache',
  'kubeglue-compile',
);

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** How long the process ran. */
  ms: number;
}

export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout matches `pattern` (rejects when the process exits first or after `timeoutMs`). */
  printed(pattern: RegExp, timeoutMs?: number): Promise<void>;
  exited: Promise<CliResult>;
}

/** Starts `kubeglue <args>` with `env` (and PATH); its stdout and stderr are pipes, as in a script. */
export function startCli(args: readonly string[], env: Record<string, string> = {}): CliProcess {
  const home = mkdtempSync(join(tmpdir(), 'kubeglue-cli-home-'));
  const started = Date.now();
  const child = spawn(process.execPath, ['--no-node-snapshot', KUBEGLUE_BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: join(home, '.config'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exited = new Promise<CliResult>((resolve) =>
    child.once('close', (code) => {
      rmSync(home, { recursive: true, force: true });
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    }),
  );
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    printed: (pattern, timeoutMs = 15_000) =>
      new Promise((resolve, reject) => {
        const deadline = setTimeout(
          () => reject(new Error(`not printed in time: ${pattern}\nstdout:\n${stdout}\nstderr:\n${stderr}`)),
          timeoutMs,
        );
        const check = () => {
          if (!pattern.test(stdout)) return;
          clearTimeout(deadline);
          child.stdout?.off('data', check);
          resolve();
        };
        child.stdout?.on('data', check);
        check();
        void exited.then(() => {
          clearTimeout(deadline);
          if (pattern.test(stdout)) resolve();
          else reject(new Error(`exited before printing ${pattern}\nstdout:\n${stdout}\nstderr:\n${stderr}`));
        });
      }),
  };
}

/** Runs `kubeglue <args>` to its end; a process that runs past `timeoutMs` is killed and fails the test. */
export async function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
  timeoutMs = 20_000,
): Promise<CliResult> {
  const cli = startCli(args, env);
  const timer = setTimeout(() => cli.child.kill('SIGKILL'), timeoutMs);
  const result = await cli.exited;
  clearTimeout(timer);
  if (result.code === null) throw new Error(`kubeglue ${args.join(' ')} ran past ${timeoutMs} ms`);
  return result;
}
