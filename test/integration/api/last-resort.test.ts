/**
 * What a server process does with an error nothing caught (kube/last-resort.ts): a rejected promise is
 * logged and the process goes on; an escaped exception shuts it down gracefully with exit code 1. Neither
 * log line shows a URL's password.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const FIXTURE = join(import.meta.dirname, '../../support/fixtures/last-resort-process.ts');

function run(mode: 'reject' | 'throw'): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [FIXTURE, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.once('exit', (code) => resolve({ code, output }));
  });
}

it('logs a promise nobody handled and keeps the process running', async () => {
  const { code, output } = await run('reject');
  expect(output).toContain(
    'a promise was rejected and nothing handled it (the process goes on): Error: connecting to postgres://***@db.internal:5432/crm failed',
  );
  expect(output).toContain('still serving');
  expect(output).not.toContain('hunter22');
  expect(code).toBe(0);
});

it('shuts down gracefully with exit code 1 when an exception escapes', async () => {
  const { code, output } = await run('throw');
  expect(output).toContain(
    'an exception escaped (shutting down, exit code 1): TypeError: cannot read postgres://***@db.internal:5432/crm',
  );
  expect(output).toContain('graceful shutdown ran');
  expect(output).not.toContain('still serving');
  expect(output).not.toContain('hunter22');
  expect(code).toBe(1);
});
