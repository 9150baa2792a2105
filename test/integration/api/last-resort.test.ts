/**
 * What a server process does with an error nothing caught (platform/last-resort.ts): a rejected promise is
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

it.each([
  [
    'logs a promise nobody handled and keeps the process running',
    {
      mode: 'reject',
      logged: [
        'a promise was rejected and nothing handled it (the process goes on): Error: connecting to postgres://***@db.internal:5432/crm failed',
        'still serving',
      ],
      notLogged: [],
      exitCode: 0,
    },
  ],
  [
    'shuts down gracefully with exit code 1 when an exception escapes',
    {
      mode: 'throw',
      logged: [
        'an exception escaped (shutting down, exit code 1): TypeError: cannot read postgres://***@db.internal:5432/crm',
        'graceful shutdown ran',
      ],
      notLogged: ['still serving'],
      exitCode: 1,
    },
  ],
] as const)('%s', async (_behaviour, { mode, logged, notLogged, exitCode }) => {
  const { code, output } = await run(mode);
  for (const line of logged) expect(output).toContain(line);
  // The password of the URL in the error never shows.
  for (const text of [...notLogged, 'hunter22']) expect(output).not.toContain(text);
  expect(code).toBe(exitCode);
});
