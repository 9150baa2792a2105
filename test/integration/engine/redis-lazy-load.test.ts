/**
 * ioredis loads on a process's first Redis step, as every connection protocol's client does: engine workers
 * that never run a Redis step do not carry it. Checked in a fresh process, whose module cache is its own.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const script = `
const { createRequire } = await import('node:module');
const { createProtocols } = await import(${JSON.stringify(new URL('../../../engine/protocols/index.ts', import.meta.url).href)});
const require = createRequire(import.meta.url);
const loaded = () => Object.keys(require.cache).some((path) => path.includes('/node_modules/ioredis/'));
const protocols = createProtocols();
const before = loaded();
const ctx = { signal: new AbortController().signal, deadline: Date.now() + 5000, traceId: 'lazy' };
const call = { url: 'redis://127.0.0.1:1/0', body: { command: 'DBSIZE' }, credentials: {}, modify: false };
const error = await protocols.redis(call, ctx).then(() => 'none', (e) => e.message);
console.log(JSON.stringify({ before, after: loaded(), error }));
`;

it('loads the Redis client on the first Redis step, not before', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    timeout: 30_000,
  });
  expect(JSON.parse(stdout)).toEqual({
    before: false,
    after: true,
    error: 'Redis at redis://127.0.0.1:1/0: cannot connect: connect ECONNREFUSED 127.0.0.1:1',
  });
});
