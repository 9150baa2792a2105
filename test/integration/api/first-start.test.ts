/**
 * The embedded deployment's first start, as a new user meets it: the admin key it prints once must never
 * be lost to a start that fails afterwards (a busy port is refused before the key is made), and a key
 * lost anyway is replaced as docs/embedded.md says ("A lost admin key"): start once with a new
 * KUBEGLUE_ADMIN_KEY, then revoke the lost one with it.
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KUBEGLUE_BIN } from '../../support/cli.ts';
import { callApi, type ServerProcess, startServerProcess, TEST_MASTER_KEY } from '../../support/embedded.ts';
import { logLines } from '../../support/log-lines.ts';
import { testTlsMaterial } from '../../support/tls.ts';

const KEY_LINE = /^admin API key \(shown once, store it now\): (kg_\S+)$/;
const NEW_ADMIN_KEY = 'kg_replacement-admin-key-0123456789abcdef';

const dirs: string[] = [];
const servers: ServerProcess[] = [];
const holders: Server[] = [];

afterAll(async () => {
  for (const server of servers) server.child.kill('SIGKILL');
  for (const holder of holders) holder.close();
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'kubeglue-first-start-'));
  dirs.push(dir);
  return dir;
}

/** The settings of a first start as a user makes it: no admin key given, the default log level. */
function firstStartEnv(dir: string, env: Record<string, string> = {}): Record<string, string> {
  return {
    KUBEGLUE_HOST: '127.0.0.1',
    KUBEGLUE_PORT: '0',
    KUBEGLUE_DATA_DIR: dir,
    KUBEGLUE_MASTER_KEY: TEST_MASTER_KEY,
    KUBEGLUE_WORKERS: '1',
    ...env,
  };
}

/** A port another process (here: this one) listens on. */
async function takenPort(): Promise<number> {
  const holder = createServer();
  holders.push(holder);
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const address = holder.address();
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}

/** `kubeglue embedded` that is expected to stop: its exit code and everything it printed. */
function startToEnd(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--no-node-snapshot', KUBEGLUE_BIN, 'embedded'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })));
}

function printedKey(output: string): string | undefined {
  for (const line of logLines(output)) {
    const match = KEY_LINE.exec(line.msg);
    if (match) return match[1];
  }
  return undefined;
}

describe('the first start', () => {
  it('refuses a busy port before making the admin key, naming the port and how to choose another', async () => {
    const dir = await dataDir();
    const port = await takenPort();
    const refused = await startToEnd(firstStartEnv(dir, { KUBEGLUE_PORT: String(port) }));
    expect(refused.code).toBe(1);
    const fatal = logLines(refused.output).find((line) => line.level === 60);
    expect(fatal?.msg).toBe(
      `port ${port} on 127.0.0.1 is taken by another process (a kubeglue already running?): stop it, or ` +
        'choose another with KUBEGLUE_PORT=<port> (0: any free port); nothing was started',
    );
    // No key was made, so none was printed and lost: the next start (on a free port) makes and shows it.
    expect(refused.output).not.toContain('admin API key');
    const server = await startServerProcess(firstStartEnv(dir));
    servers.push(server);
    const key = printedKey(server.output());
    expect(key).toBeDefined();
    expect((await callApi(server.url, key ?? '', 'GET', '/v1/api-keys')).status).toBe(200);
  });

  it('refuses a certificate and a key that are not a pair before making the admin key', async () => {
    const dir = await dataDir();
    const certFile = join(dir, 'cert.pem');
    const keyFile = join(dir, 'other-key.pem');
    await writeFile(certFile, testTlsMaterial().cert);
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    await writeFile(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const refused = await startToEnd(
      firstStartEnv(dir, { KUBEGLUE_TLS_CERT_FILE: certFile, KUBEGLUE_TLS_KEY_FILE: keyFile }),
    );
    expect(refused.code).toBe(1);
    expect(logLines(refused.output).find((line) => line.level === 60)?.msg).toMatch(
      /^KUBEGLUE_TLS_CERT_FILE and KUBEGLUE_TLS_KEY_FILE are not a usable pair: /,
    );
    expect(refused.output).not.toContain('admin API key');
  });

  it('replaces a lost admin key: a start with a new KUBEGLUE_ADMIN_KEY adds it, which revokes the lost one', async () => {
    const dir = await dataDir();
    const first = await startServerProcess(firstStartEnv(dir));
    servers.push(first);
    const lost = printedKey(first.output());
    expect(lost).toBeDefined();
    first.child.kill('SIGTERM');
    await first.exited;

    // The key was not kept. A start on the same data dir with a new one (docs/embedded.md):
    const second = await startServerProcess(firstStartEnv(dir, { KUBEGLUE_ADMIN_KEY: NEW_ADMIN_KEY }));
    servers.push(second);
    expect(logLines(second.output()).map((line) => line.msg)).toContain(
      'KUBEGLUE_ADMIN_KEY added as an additional admin API key',
    );
    const listed = await callApi<{ data: Array<{ id: string; name: string }> }>(
      second.url,
      NEW_ADMIN_KEY,
      'GET',
      '/v1/api-keys',
    );
    expect(listed.status).toBe(200);
    const generated = listed.body.data.find((key) => key.name === 'admin (generated at first start)');
    expect(generated).toBeDefined();
    const revoked = await callApi(second.url, NEW_ADMIN_KEY, 'DELETE', `/v1/api-keys/${generated?.id}`);
    expect(revoked.status).toBeLessThan(300);
    expect((await callApi(second.url, lost ?? '', 'GET', '/v1/tools')).status).toBe(401);
    second.child.kill('SIGTERM');
    await second.exited;

    // The new key is stored: it stays valid after a start without the variable.
    const third = await startServerProcess(firstStartEnv(dir));
    servers.push(third);
    expect(printedKey(third.output())).toBeUndefined();
    expect((await callApi(third.url, NEW_ADMIN_KEY, 'GET', '/v1/tools')).status).toBe(200);
  });
});
