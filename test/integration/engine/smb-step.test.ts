/**
 * SMB steps against a real Samba smbd (test/support/samba.ts): the file operations, modify: false, the
 * credential forms (system, URL, domain, connection URL), the errors a user meets, the download cap, the
 * run's deadline and cancellation of a transfer in flight, and signing on every dialect from 2.0.2 to 3.1.1.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../contract/json.ts';
import { executeSmbStep, type SmbStepRequest } from '../../../engine/protocols/smb.ts';
import { BINARY, DATA_JSON_GET, DIRECTORY_ROUND, failure, seed } from '../../support/file-transfer.ts';
import { freeLoopbackPort } from '../../support/os.ts';
import { type SambaOptions, sambaMissing, startSamba, type TestSamba } from '../../support/samba.ts';
import { startTcpRelay } from '../../support/tcp-relay.ts';

const skip = sambaMissing();

type Options = Partial<Omit<SmbStepRequest, 'body'>>;

/** Runs a step on the server (default: the test user from the credentials, the files share's /data). */
function runner(server: () => TestSamba) {
  return (body: unknown, options: Options = {}): Promise<JsonValue> => {
    const samba = server();
    return executeSmbStep({
      url: `${samba.url}/files/data`,
      credentials: { username: samba.username, password: samba.password, domain: samba.workgroup },
      modify: true,
      signal: new AbortController().signal,
      deadline: Date.now() + 20_000,
      ...options,
      body,
    });
  };
}

describe.skipIf(skip)('SMB steps', () => {
  let samba: TestSamba;
  const run = runner(() => samba);
  const root = () => samba.shares.files;

  beforeAll(async () => {
    samba = await startSamba();
    await seed(root());
    await writeFile(join(root(), 'secret.txt'), 'for root only');
    await chmod(join(root(), 'secret.txt'), 0o600);
    await writeFile(join(samba.shares.readonly, 'report.csv'), 'id\n1\n');
  });
  afterAll(async () => {
    await samba?.stop();
  });

  /** Logons smbd has seen so far. */
  const logons = async () => (await samba.authLog()).length;

  describe('operations', () => {
    it('lists a directory with names, paths, sizes, types and modify times', async () => {
      const result = (await run({ operation: 'list', path: 'in' })) as Record<string, JsonValue>[];
      const byName = new Map(result.map((entry) => [entry.name, entry]));
      // SMB times have 100 ns; shown to the millisecond, cut (not rounded, as a Date from stat is).
      const mtime = new Date(Math.floor((await stat(join(root(), 'data/in/notes.txt'))).mtimeMs));
      expect(byName.get('notes.txt')).toEqual({
        name: 'notes.txt',
        path: '/data/in/notes.txt',
        size: 11,
        type: 'file',
        modifyTime: mtime.toISOString(),
      });
      expect(byName.get('old.txt')?.modifyTime).toBe('2020-03-04T10:30:00.000Z');
      expect(byName.get('sub')).toMatchObject({ type: 'directory', size: 0 });
      expect([...byName.keys()]).not.toContain('.');
    });

    it('lists the URL directory when the operation has no path, and the share root for /', async () => {
      const here = (await run({ operation: 'list' })) as Record<string, JsonValue>[];
      expect(here.map((entry) => entry.path)).toEqual(['/data/in']);
      const top = (await run({ operation: 'list', path: '/' })) as Record<string, JsonValue>[];
      expect(top.map((entry) => entry.name)).toEqual(expect.arrayContaining(['data', 'secret.txt']));
    });

    it('gets a file as parsed content with the bytes as a file reference, like FTP and SFTP', async () => {
      const [json, csv, binary] = (await run([
        { operation: 'get', path: 'in/data.json' },
        { operation: 'get', path: 'in/rows.csv' },
        { operation: 'get', path: '/data/in/blob.bin' },
      ])) as Record<string, JsonValue>[];
      expect(json).toEqual(DATA_JSON_GET);
      expect(csv?.content).toEqual([
        { id: '1', name: 'Ada' },
        { id: '2', name: 'Linus' },
      ]);
      expect(binary?.content).toBeNull();
      const file = binary?.file as Record<string, JsonValue>;
      expect(Buffer.from(String(file.contentBase64), 'base64').equals(BINARY)).toBe(true);
    });

    it('gets a file of several megabytes intact', async () => {
      const big = Buffer.alloc(5 * 1024 * 1024 + 123);
      for (let i = 0; i < big.length; i += 4096) big.writeUInt32LE(i, i);
      await writeFile(join(root(), 'data/big.bin'), big);
      const result = (await run({ operation: 'get', path: 'big.bin' })) as Record<string, JsonValue>;
      expect(result.size).toBe(big.length);
      const file = result.file as Record<string, JsonValue>;
      expect(Buffer.from(String(file.contentBase64), 'base64').equals(big)).toBe(true);
    });

    it('puts text, JSON, base64 and large content, and the share holds exactly those bytes', async () => {
      const large = Buffer.alloc(3 * 1024 * 1024 + 7, 'k');
      const results = await run([
        { operation: 'mkdir', path: 'out' },
        { operation: 'put', path: 'out/text.txt', content: 'grüße' },
        { operation: 'put', path: 'out/object.json', content: { a: [1, 2] } },
        { operation: 'put', path: 'out/b64.bin', content: BINARY.toString('base64'), encoding: 'base64' },
        { operation: 'put', path: 'out/large.txt', content: large.toString() },
        { operation: 'put', path: 'out/text.txt', content: 'replaced' },
      ]);
      expect(results).toEqual([
        { success: true, path: '/data/out' },
        { success: true, path: '/data/out/text.txt', size: Buffer.byteLength('grüße') },
        { success: true, path: '/data/out/object.json', size: 11 },
        { success: true, path: '/data/out/b64.bin', size: BINARY.byteLength },
        { success: true, path: '/data/out/large.txt', size: large.length },
        { success: true, path: '/data/out/text.txt', size: 8 },
      ]);
      expect(await readFile(join(root(), 'data/out/text.txt'), 'utf8')).toBe('replaced');
      expect(await readFile(join(root(), 'data/out/object.json'), 'utf8')).toBe('{"a":[1,2]}');
      expect((await readFile(join(root(), 'data/out/b64.bin'))).equals(BINARY)).toBe(true);
      expect((await readFile(join(root(), 'data/out/large.txt'))).equals(large)).toBe(true);
    });

    it('creates directories recursively, renames, checks existence, stats and deletes', async () => {
      expect(await run(DIRECTORY_ROUND.body)).toEqual(DIRECTORY_ROUND.results);
    });

    it('refuses to delete a directory that is not empty, and to rename onto an existing file', async () => {
      await expect(run({ operation: 'delete', path: 'in' })).rejects.toThrow(
        'SMB delete /data/in failed: the directory is not empty (STATUS_DIRECTORY_NOT_EMPTY)',
      );
      await expect(
        run({ operation: 'rename', path: 'in/notes.txt', newPath: 'in/rows.csv' }),
      ).rejects.toThrow(
        /rename .* failed: something already exists at that path \(STATUS_OBJECT_NAME_COLLISION\)/,
      );
      expect(await readFile(join(root(), 'data/in/rows.csv'), 'utf8')).toBe('id,name\n1,Ada\n2,Linus\n');
    });

    it('runs an array of operations in order on one connection and one logon', async () => {
      const before = await logons();
      const results = (await run([
        { operation: 'put', path: 'order.txt', content: 'first' },
        { operation: 'get', path: 'order.txt' },
        { operation: 'delete', path: 'order.txt' },
        { operation: 'exists', path: 'order.txt' },
      ])) as Record<string, JsonValue>[];
      expect(results[1]?.content).toBe('first');
      expect(results[3]).toEqual({ path: '/data/order.txt', exists: false });
      expect((await logons()) - before).toBe(1);
    });

    it('logs off and leaves no session behind', async () => {
      await run({ operation: 'list' });
      await expect.poll(() => samba.sessionCount()).toBe(0);
    });
  });

  describe('modify: false', () => {
    it('allows list, get, exists and stat', async () => {
      const results = (await run(
        [
          { operation: 'list', path: 'in' },
          { operation: 'get', path: 'in/notes.txt' },
          { operation: 'exists', path: 'in/notes.txt' },
          { operation: 'stat', path: 'in/notes.txt' },
        ],
        { modify: false },
      )) as Record<string, JsonValue>[];
      expect(results[1]?.content).toBe('hello\nworld');
      expect(results[2]).toMatchObject({ exists: true });
    });

    it.each([
      ['put', { operation: 'put', path: 'nope.txt', content: 'x' }],
      ['delete', { operation: 'delete', path: 'in/notes.txt' }],
      ['rename', { operation: 'rename', path: 'in/notes.txt', newPath: 'moved.txt' }],
      ['mkdir', { operation: 'mkdir', path: 'newdir' }],
    ])('refuses %s before connecting, saying to set modify: true', async (name, operation) => {
      const before = await logons();
      const error = await failure(run([{ operation: 'list' }, operation], { modify: false }));
      expect(error?.message).toBe(
        `SMB body[1] ${name} refused: the step has modify: false, which allows only list, get, exists and stat; ` +
          'set modify: true on the step to put, delete, rename or mkdir',
      );
      expect(await logons()).toBe(before);
      expect(await readFile(join(root(), 'data/in/notes.txt'), 'utf8')).toBe('hello\nworld');
    });
  });

  describe('credentials', () => {
    const userUrl = (userinfo: string, path = '/files/data') =>
      `smb://${userinfo}@127.0.0.1:${samba.port}${path}`;

    it('logs on with NTLMv2 as the credentials username in the credentials domain', async () => {
      await run({ operation: 'exists', path: 'in' });
      expect((await samba.authLog()).at(-1)).toMatch(
        /user \[KGTEST\]\\\[root\] .* with \[NTLMv2\] status \[NT_STATUS_OK\]/,
      );
    });

    it('takes DOMAIN;user:password from the URL, percent-decoded', async () => {
      const url = userUrl(`OTHERDOM%3Broot:${encodeURIComponent(samba.password)}`);
      await expect(run({ operation: 'exists', path: 'in' }, { url, credentials: {} })).resolves.toEqual({
        path: '/data/in',
        exists: true,
        type: 'directory',
      });
      expect((await samba.authLog()).at(-1)).toContain('user [OTHERDOM]\\[root]');
    });

    it('reads the domain from a DOMAIN\\user username', async () => {
      await run(
        { operation: 'exists', path: 'in' },
        { credentials: { username: 'SLASHDOM\\root', password: samba.password } },
      );
      expect((await samba.authLog()).at(-1)).toContain('user [SLASHDOM]\\[root]');
    });

    it("takes the user from the system's connection URL when the step URL has none", async () => {
      const connection = userUrl(`root:${encodeURIComponent(samba.password)}`, '/files');
      const result = await run(
        { operation: 'exists', path: 'in' },
        { credentials: { url: connection, domain: 'URLDOM' } },
      );
      expect(result).toMatchObject({ exists: true });
      expect((await samba.authLog()).at(-1)).toContain('user [URLDOM]\\[root]');
    });

    it('fails a wrong password as an authentication failure naming the server, never the password', async () => {
      const wrong = 'wrong-Password-123';
      const error = await failure(
        run({ operation: 'list' }, { credentials: { username: 'root', password: wrong } }),
      );
      expect(error?.message).toBe(
        `SMB connect to //127.0.0.1:${samba.port}/files failed: authentication failed: the server refused the user name or password (STATUS_LOGON_FAILURE)`,
      );
      const inUrl = await failure(
        run({ operation: 'list' }, { url: userUrl(`root:${wrong}`), credentials: {} }),
      );
      expect(inUrl?.message).toContain('STATUS_LOGON_FAILURE');
      expect(inUrl?.message).not.toContain(wrong);
    });

    it('never shares a connection between credentials: steps at once each log on as their own user', async () => {
      const other = { username: samba.other.username, password: samba.other.password };
      const [mine, theirs] = await Promise.allSettled([
        run({ operation: 'get', path: '/secret.txt' }),
        run({ operation: 'get', path: '/secret.txt' }, { credentials: other }),
      ]);
      expect(mine.status === 'fulfilled' && mine.value).toMatchObject({ content: 'for root only' });
      expect(theirs.status === 'rejected' && String(theirs.reason)).toContain('STATUS_ACCESS_DENIED');
      const users = (await samba.authLog())
        .slice(-2)
        .map((line) => /user \[[^\]]*\]\\\[([^\]]+)\]/.exec(line)?.[1]);
      expect(users.sort()).toEqual(['daemon', 'root']);
    });

    it('refuses the guest session a server gives a user it does not know', async () => {
      const error = await failure(
        run({ operation: 'list' }, { credentials: { username: 'nosuchuser', password: 'whatever' } }),
      );
      expect(error?.message).toBe(
        `SMB connect to //127.0.0.1:${samba.port}/files failed: the server logged the user on as a guest ` +
          '(it does not know the user name), so nothing it sends can be checked',
      );
    });

    it('refuses a step without a username before connecting', async () => {
      const error = await failure(run({ operation: 'list' }, { credentials: {} }));
      expect(error?.message).toMatch(/^SMB needs a username/);
    });
  });

  describe('errors', () => {
    it('fails a refused connection, naming the server', async () => {
      const port = await freeLoopbackPort();
      const error = await failure(run({ operation: 'list' }, { url: `smb://127.0.0.1:${port}/files` }));
      expect(error?.message).toBe(
        `SMB connect to //127.0.0.1:${port}/files failed: connection refused: nothing accepts connections at 127.0.0.1:${port}`,
      );
    });

    it('fails a share the server does not have', async () => {
      const error = await failure(run({ operation: 'list' }, { url: `${samba.url}/nosuchshare` }));
      expect(error?.message).toBe(
        `SMB connect to //127.0.0.1:${samba.port}/nosuchshare failed: share not found: the server has no share of that name (STATUS_BAD_NETWORK_NAME)`,
      );
    });

    it('fails a file that does not exist', async () => {
      await expect(run({ operation: 'get', path: 'in/missing.txt' })).rejects.toThrow(
        'SMB get /data/in/missing.txt failed: no such file or directory (STATUS_OBJECT_NAME_NOT_FOUND)',
      );
      await expect(run({ operation: 'list', path: 'nodir/deeper' })).rejects.toThrow(
        /SMB list \/data\/nodir\/deeper failed: no such (file or directory|directory on the path)/,
      );
    });

    it('fails access to a file, a directory and a share the account may not use', async () => {
      const other = { username: samba.other.username, password: samba.other.password };
      await expect(run({ operation: 'get', path: '/secret.txt' }, { credentials: other })).rejects.toThrow(
        'SMB get /secret.txt failed: access denied (STATUS_ACCESS_DENIED)',
      );
      await expect(
        run({ operation: 'put', path: 'in/new.txt', content: 'x' }, { credentials: other }),
      ).rejects.toThrow('SMB put /data/in/new.txt failed: access denied (STATUS_ACCESS_DENIED)');
      await expect(
        run({ operation: 'list' }, { url: `${samba.url}/private`, credentials: other }),
      ).rejects.toThrow(`SMB connect to //127.0.0.1:${samba.port}/private failed: access denied`);
    });

    it('fails a write to a read-only share', async () => {
      const url = `${samba.url}/readonly`;
      expect(await run({ operation: 'get', path: 'report.csv' }, { url })).toMatchObject({
        content: [{ id: '1' }],
      });
      await expect(run({ operation: 'put', path: 'x.txt', content: 'x' }, { url })).rejects.toThrow(
        /SMB put \/x\.txt failed: (access denied|the share is read-only)/,
      );
    });

    it('fails a server that does not speak SMB (an HTTP port) without hanging', async () => {
      const http: Server = createServer((socket) => {
        socket.once('data', () => socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n'));
      });
      await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
      const port = (http.address() as { port: number }).port;
      try {
        const error = await failure(run({ operation: 'list' }, { url: `smb://127.0.0.1:${port}/files` }));
        expect(error?.message).toBe(
          `SMB connect to //127.0.0.1:${port}/files failed: the server sent something that is not SMB2 over TCP`,
        );
      } finally {
        await new Promise((resolve) => http.close(resolve));
      }
    });

    it('fails a URL without a share before connecting', async () => {
      await expect(run({ operation: 'list' }, { url: samba.url })).rejects.toThrow(
        'Invalid SMB URL: it names no share (smb://host/share/path)',
      );
    });

    it('fails with a timeout when a server never answers before the deadline', async () => {
      const silent: Server = createServer(() => {});
      const held: Socket[] = [];
      silent.on('connection', (socket) => held.push(socket));
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const port = (silent.address() as { port: number }).port;
      try {
        const error = await failure(
          run({ operation: 'list' }, { url: `smb://127.0.0.1:${port}/files`, deadline: Date.now() + 1_500 }),
        );
        expect(error?.message).toBe(
          `SMB connect to //127.0.0.1:${port}/files timed out: the run's deadline was reached`,
        );
        expect(error?.name).toBe('TimeoutError');
      } finally {
        for (const socket of held) socket.destroy();
        await new Promise((resolve) => silent.close(resolve));
      }
    });
  });

  describe('limits', () => {
    it('refuses a file larger than the download limit before reading it', async () => {
      await expect(run({ operation: 'get', path: 'in/rows.csv' }, { maxDownloadBytes: 5 })).rejects.toThrow(
        'SMB get /data/in/rows.csv failed: the file is larger than the 5 byte download limit',
      );
    });

    describe('a large transfer in flight', () => {
      const size = 32 * 1024 * 1024;
      beforeAll(async () => {
        await writeFile(join(root(), 'data/huge.bin'), Buffer.alloc(size, 'h'));
      });

      for (const stop of ['cancelled', 'past the deadline'] as const) {
        it(`is stopped on the server when ${stop}`, async () => {
          const relay = await startTcpRelay(samba, { holdAfterBytes: 4 * 1024 * 1024 });
          const controller = new AbortController();
          try {
            const step = failure(
              run(
                { operation: 'get', path: 'huge.bin' },
                {
                  url: `smb://127.0.0.1:${relay.port}/files/data`,
                  signal: controller.signal,
                  ...(stop === 'past the deadline' ? { deadline: Date.now() + 3_000 } : {}),
                },
              ),
            );
            await relay.held;
            if (stop === 'cancelled') controller.abort();
            const error = await step;
            expect(error?.message).toBe(
              stop === 'cancelled'
                ? 'SMB get /data/huge.bin aborted'
                : "SMB get /data/huge.bin timed out: the run's deadline was reached",
            );
            // The client hung up, and smbd ended the session: nothing more is read for this step.
            await expect.poll(() => relay.openClients).toBe(0);
            await expect.poll(() => samba.sessionCount()).toBe(0);
            expect(relay.fromServer).toBeLessThan(size);
          } finally {
            await relay.close();
          }
        });
      }
    });
  });
});

describe
  .skipIf(skip)
  .each(['SMB2_02', 'SMB2_10', 'SMB3_00', 'SMB3_02', 'SMB3_11'] satisfies SambaOptions['dialect'][])(
  'a server speaking only %s',
  (dialect) => {
    let samba: TestSamba;
    const run = runner(() => samba);
    beforeAll(async () => {
      samba = await startSamba({ dialect });
      await mkdir(join(samba.shares.files, 'data'));
      await writeFile(join(samba.shares.files, 'data/plain.txt'), 'A'.repeat(200_000));
    });
    afterAll(async () => {
      await samba?.stop();
    });

    it('runs a round trip on a signed session', async () => {
      const results = (await run([
        { operation: 'put', path: 'round.txt', content: 'trip' },
        { operation: 'get', path: 'round.txt' },
        { operation: 'list' },
      ])) as Record<string, JsonValue>[];
      expect(results[1]?.content).toBe('trip');
      expect((results[2] as unknown as Array<{ name: string }>).map((e) => e.name).sort()).toEqual([
        'plain.txt',
        'round.txt',
      ]);
    });

    it('fails instead of returning data that was changed on the way', async () => {
      // One byte of the file's content changed between smbd and the client: only the signature can tell.
      const relay = await startTcpRelay(samba, {
        alterFromServer: (chunk) => {
          const at = chunk.indexOf('AAAAAAAAAAAAAAAA');
          if (at < 0) return chunk;
          const changed = Buffer.from(chunk);
          changed[at] = 'B'.charCodeAt(0);
          return changed;
        },
      });
      try {
        const error = await failure(
          run({ operation: 'get', path: 'plain.txt' }, { url: `smb://127.0.0.1:${relay.port}/files/data` }),
        );
        expect(error?.message).toBe(
          'SMB get /data/plain.txt failed: an answer of the server has a wrong signature',
        );
      } finally {
        await relay.close();
      }
    });
  },
);

describe('the SMB client module', () => {
  it('loads on the first SMB step, not with the engine', async () => {
    // A fresh process records every module it loads: engine/protocols/index.ts alone must not bring SMB in.
    const script = `
      import { registerHooks } from 'node:module';
      const loaded = [];
      registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
      const { createProtocols } = await import(process.argv[1]);
      const smb = () => loaded.some((url) => url.includes('/engine/protocols/smb'));
      const before = smb();
      const ctx = { signal: new AbortController().signal, deadline: Date.now() + 5000, traceId: 't' };
      const call = { url: 'smb://127.0.0.1:1/share', body: { operation: 'list' }, credentials: {}, modify: false };
      await createProtocols().smb(call, ctx).catch(() => {});
      console.log(JSON.stringify({ before, after: smb() }));
    `;
    const index = new URL('../../../engine/protocols/index.ts', import.meta.url).pathname;
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--input-type=module',
      '-e',
      script,
      index,
    ]);
    expect(JSON.parse(stdout)).toEqual({ before: false, after: true });
  });
});
