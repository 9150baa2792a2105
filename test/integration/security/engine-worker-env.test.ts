/**
 * Issue 7, item 9: pool workers run user code; they start with only the environment they need, never the
 * server's secrets, and get the sandbox and egress settings as explicit values (the pool's first message).
 */

import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useWorkerPool } from '../../support/engine.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { runOrder } from '../../support/run-order.ts';

const SECRETS = {
  KUBEGLUE_MASTER_KEY: 'aa'.repeat(32),
  KUBEGLUE_ADMIN_KEY: 'kg_admin-key-that-must-stay-in-the-server',
  KUBEGLUE_DATABASE_URL: 'postgres://kubeglue:db-password@db/kubeglue',
  AWS_SECRET_ACCESS_KEY: 'aws-secret-of-the-node',
};

const saved: Record<string, string | undefined> = {};

// The server's secrets are in this process's environment before the pool starts its workers, and
// restored after the pool has stopped (hooks of the fixtures below run inside these).
beforeAll(() => {
  for (const [name, value] of Object.entries(SECRETS)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
});
afterAll(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

const target = useHttpTarget();
const pool = useWorkerPool({
  workers: 1,
  sandboxMemoryMb: 64,
  sandboxTimeoutMs: 2000,
  egress: { privateDefault: 'deny', allow: [], deny: ['10.96.0.0/12'] },
});

beforeAll(() => {
  target.route('GET', '/hello', { body: { hello: 'world' } });
});

async function workerEnvironment(): Promise<Record<string, string>> {
  const pid = pool.workerPids()[0];
  if (pid === undefined) throw new Error('no worker');
  const raw = await readFile(`/proc/${pid}/environ`, 'utf8');
  return Object.fromEntries(
    raw
      .split('\0')
      .filter(Boolean)
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
}

describe('pool worker environment', () => {
  it.skipIf(process.platform !== 'linux')('holds none of the server secrets', async () => {
    const env = await workerEnvironment();
    for (const name of Object.keys(SECRETS)) expect(env[name]).toBeUndefined();
    expect(JSON.stringify(env)).not.toContain('db-password');
    expect(env.PATH).toBe(process.env.PATH);
  });

  it.skipIf(process.platform !== 'linux')('gets the sandbox and egress settings explicitly', async () => {
    // As values over its IPC channel (the 'init' message), never through its environment.
    const env = await workerEnvironment();
    expect(Object.keys(env).filter((name) => name.startsWith('KUBEGLUE_'))).toEqual([]);
  });

  it('runs transforms with the sandbox settings it was given', async () => {
    const result = await pool.run(
      runOrder({
        steps: [{ id: 'spin', config: { type: 'transform', transformCode: '() => { while (true) {} }' } }],
      }),
    );
    expect(result.status).toBe('failed');
    expect(result.error).toContain('timed out after 2000 ms');
  });

  it('applies the egress policy it was given', async () => {
    const result = await pool.run(
      runOrder({ steps: [{ id: 'get', config: { url: `${target.url}/hello` } }] }),
    );
    expect(result.status).toBe('failed');
    expect(result.error).toContain('refused to connect to 127.0.0.1: a loopback address');
    expect(target.count('/hello')).toBe(0);
  });
});
