/**
 * The MySQL client (mysql2) costs megabytes resident: a process loads it with its first MySQL step, never
 * before (most engine workers only ever run HTTP steps). Its own file, so nothing else loaded it first.
 */
import { createRequire } from 'node:module';
import { expect, it } from 'vitest';
import { createProtocols } from '../../../engine/protocols/index.ts';

const require = createRequire(import.meta.url);
const mysql2Loaded = () => Object.keys(require.cache).some((path) => path.includes('/node_modules/mysql2/'));

it('loads mysql2 with the first MySQL step of the process, not with the protocols', async () => {
  const protocols = createProtocols();
  expect(mysql2Loaded()).toBe(false);
  const ctx = { signal: new AbortController().signal, deadline: Date.now() + 10_000, traceId: 't' };
  // Nothing listens on port 1: the step fails, but only once the client is loaded.
  await expect(
    protocols.mysql(
      { url: 'mysql://127.0.0.1:1/shop', body: 'SELECT 1', credentials: {}, modify: false },
      ctx,
    ),
  ).rejects.toThrow('ECONNREFUSED');
  expect(mysql2Loaded()).toBe(true);
});
