/**
 * `kubeglue runner` as a runner Pod runs it, as a child process against an internal API, for tests:
 *
 *   const { code, output, summary } = await startRunnerProcess({ url, runId, token, dir }).exited;
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SETTINGS } from '../../config/config.ts';
import { decodeSummary, type RunnerSummary } from '../../contract/wire/runner.ts';
import { KUBEGLUE_BIN as KUBEGLUE } from './cli.ts';

export interface RunnerExit {
  code: number | null;
  /** stdout and stderr together. */
  output: string;
  /** The termination message (what the operator copies into the ToolRun status). */
  summary: RunnerSummary | undefined;
}

export interface RunnerProcess {
  child: ChildProcess;
  exited: Promise<RunnerExit>;
  /** stdout and stderr so far. */
  output(): string;
}

export function startRunnerProcess(opts: {
  url: string;
  runId: string;
  token: string;
  /** Where the termination message is written. */
  dir: string;
  attempt?: number;
  env?: Record<string, string>;
}): RunnerProcess {
  const terminationPath = join(opts.dir, `${opts.runId}.termination`);
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('KUBEGLUE_')),
  );
  const child = spawn(process.execPath, ['--no-node-snapshot', KUBEGLUE, 'runner'], {
    env: {
      ...inherited,
      [SETTINGS.tree.internalUrl.name]: opts.url,
      [SETTINGS.tree.runId.name]: opts.runId,
      [SETTINGS.tree.runToken.name]: opts.token,
      [SETTINGS.tree.runAttempt.name]: String(opts.attempt ?? 1),
      [SETTINGS.tree.terminationMessagePath.name]: terminationPath,
      KUBEGLUE_RUNNER_HEARTBEAT_MS: '200',
      // Test targets are on loopback, which a runner Pod refuses unless the deployment allows it.
      KUBEGLUE_EGRESS_ALLOW: '127.0.0.1',
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<RunnerExit>((resolve) => {
    child.once('exit', (code) => {
      void readFile(terminationPath, 'utf8')
        .catch(() => undefined)
        .then((message) => resolve({ code, output, summary: decodeSummary(message) }));
    });
  });
  return { child, exited, output: () => output };
}
