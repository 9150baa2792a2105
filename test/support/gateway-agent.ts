/**
 * A real gateway agent process (`kubeglue agent -config <file> -debug`) for tests: its output is kept so
 * a test can wait for a line and assert that no secret was printed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { KUBEGLUE_BIN as CLI } from './cli.ts';

export interface AgentProcess {
  child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** Resolves once the output contains `text` (rejects after timeoutMs). */
  waitFor(text: string, timeoutMs?: number): Promise<void>;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function startAgent(
  config: Record<string, unknown>,
  args: string[] = ['-debug'],
): Promise<AgentProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'kubeglue-agent-'));
  const path = join(dir, 'agent.yaml');
  await writeFile(path, stringify(config), { mode: 0o600 });
  const child = spawn(process.execPath, ['--no-node-snapshot', CLI, 'agent', '-config', path, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const waiters = new Set<() => void>();
  const append = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const wake of waiters) wake();
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      void rm(dir, { recursive: true, force: true });
      for (const wake of waiters) wake();
      resolve(code);
    });
  });
  return {
    child,
    output: () => output,
    exited,
    waitFor: (text, timeoutMs = 15_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (output.includes(text)) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`the agent did not print '${text}'; its output:\n${output}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    kill: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
