import { mkdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../contract/json.ts';
import { fileRefFromBytes } from '../../../engine/file-ref.ts';
import { executeFtpStep, parseListDate } from '../../../engine/protocols/ftp.ts';
import { type FtpServerOptions, type FtpTestServer, startFtpServer } from '../../support/ftp-server.ts';

const PASSWORD = 'p@ss:w/rd%20x';
const BINARY = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0xfe, 0x01]);

function withUser(url: string, user = 'tester', password = PASSWORD): string {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(user);
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

/** Inserts a path into a server URL, keeping its query (`?tlsMode=implicit`). */
function withPath(url: string, path: string): string {
  const parsed = new URL(url);
  parsed.pathname = path;
  return parsed.toString();
}

interface RunOptions {
  url: string;
  credentials?: Record<string, string>;
  signal?: AbortSignal;
  deadline?: number;
  maxDownloadBytes?: number;
}

function run(body: unknown, options: RunOptions): Promise<JsonValue> {
  return executeFtpStep({
    url: options.url,
    body,
    credentials: options.credentials ?? {},
    signal: options.signal ?? new AbortController().signal,
    deadline: options.deadline ?? Date.now() + 20_000,
    ...(options.maxDownloadBytes !== undefined ? { maxDownloadBytes: options.maxDownloadBytes } : {}),
  });
}

async function failure(pending: Promise<unknown>): Promise<Error | undefined> {
  return pending.then(
    () => undefined,
    (caught: unknown) => caught as Error,
  );
}

async function seed(root: string): Promise<void> {
  await mkdir(join(root, 'data/in/sub'), { recursive: true });
  await writeFile(join(root, 'data/in/data.json'), '{"items":[1,2],"ok":true}');
  await writeFile(join(root, 'data/in/rows.csv'), 'id,name\n1,Ada\n2,Linus\n');
  await writeFile(join(root, 'data/in/tabs.tsv'), 'id\tname\n1\tAda\n');
  await writeFile(join(root, 'data/in/notes.txt'), 'hello\nworld');
  await writeFile(join(root, 'data/in/sniffed.log'), '[{"a":1}]');
  await writeFile(join(root, 'data/in/blob.bin'), BINARY);
  await writeFile(join(root, 'data/in/sub/inner.txt'), 'inner');
  const old = new Date(Date.UTC(2020, 2, 4, 10, 30));
  await writeFile(join(root, 'data/in/old.txt'), 'old');
  await utimes(join(root, 'data/in/old.txt'), old, old);
}

/** A gate a server hook waits on, plus a promise that resolves once the hook was reached. */
function gate(): { reached: Promise<void>; wait: () => Promise<void>; open: () => void } {
  let markReached: () => void = () => {};
  let release: () => void = () => {};
  const reached = new Promise<void>((resolve) => {
    markReached = resolve;
  });
  const opened = new Promise<void>((resolve) => {
    release = resolve;
  });
  return {
    reached,
    wait: () => {
      markReached();
      return opened;
    },
    open: () => release(),
  };
}

const MODES = [
  { name: 'FTP', tls: 'none' },
  { name: 'FTPS (explicit AUTH TLS)', tls: 'explicit' },
  { name: 'FTPS (implicit TLS)', tls: 'implicit' },
] as const;

describe.each(MODES)('$name operations', ({ tls }) => {
  let server: FtpTestServer;
  let label: string;
  let baseUrl: string;
  let credentials: Record<string, string>;

  const call = (body: unknown, options: Partial<RunOptions> = {}) =>
    run(body, { url: baseUrl, credentials, ...options });

  beforeAll(async () => {
    server = await startFtpServer({ tls, password: PASSWORD });
    await seed(server.root);
    label = tls === 'none' ? 'FTP' : 'FTPS';
    baseUrl = withPath(withUser(server.url), '/data/');
    credentials = server.ca ? { ca: server.ca } : {};
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('lists a directory with names, paths, sizes, types and modify times', async () => {
    const result = (await call({ operation: 'list', path: 'in' })) as Record<string, JsonValue>[];
    const byName = new Map(result.map((entry) => [entry.name, entry]));
    const mtime = (await stat(join(server.root, 'data/in/notes.txt'))).mtime;
    expect(byName.get('notes.txt')).toEqual({
      name: 'notes.txt',
      path: '/data/in/notes.txt',
      size: 11,
      type: 'file',
      // LIST without MLSD has minute resolution.
      modifyTime: new Date(Math.floor(mtime.getTime() / 60_000) * 60_000).toISOString(),
    });
    expect(byName.get('old.txt')?.modifyTime).toBe('2020-03-04T00:00:00.000Z');
    expect(byName.get('sub')?.type).toBe('directory');
  });

  it('gets JSON, CSV, TSV, text and binary files with parsed content and a file reference', async () => {
    const [json, csv, tsv, text, sniffed, binary] = (await call([
      { operation: 'get', path: 'in/data.json' },
      { operation: 'get', path: 'in/rows.csv' },
      { operation: 'get', path: 'in/tabs.tsv' },
      { operation: 'get', path: 'in/notes.txt' },
      { operation: 'get', path: 'in/sniffed.log' },
      { operation: 'get', path: 'in/blob.bin' },
    ])) as Record<string, JsonValue>[];
    const jsonBytes = Buffer.from('{"items":[1,2],"ok":true}');
    expect(json).toEqual({
      path: '/data/in/data.json',
      size: jsonBytes.byteLength,
      contentType: 'application/json',
      content: { items: [1, 2], ok: true },
      file: { ...fileRefFromBytes(jsonBytes, 'data.json', 'application/json') },
    });
    expect(csv?.content).toEqual([
      { id: '1', name: 'Ada' },
      { id: '2', name: 'Linus' },
    ]);
    expect(tsv?.content).toEqual([{ id: '1', name: 'Ada' }]);
    expect(text?.content).toBe('hello\nworld');
    expect(sniffed?.content).toEqual([{ a: 1 }]);
    expect(binary?.content).toBeNull();
    const file = binary?.file as Record<string, JsonValue>;
    expect(Buffer.from(String(file.contentBase64), 'base64').equals(BINARY)).toBe(true);
  });

  it('puts strings as UTF-8, objects as JSON and file references as their bytes', async () => {
    const results = await call([
      { operation: 'mkdir', path: 'out' },
      { operation: 'put', path: 'out/text.txt', content: 'grüße' },
      { operation: 'put', path: 'out/object.json', content: { a: [1, 2] } },
      { operation: 'put', path: 'out/copy.bin', content: { ...fileRefFromBytes(BINARY, 'x.bin', 'a/b') } },
    ]);
    expect(results).toEqual([
      { success: true, path: '/data/out' },
      { success: true, path: '/data/out/text.txt', size: Buffer.byteLength('grüße') },
      { success: true, path: '/data/out/object.json', size: Buffer.byteLength('{"a":[1,2]}') },
      { success: true, path: '/data/out/copy.bin', size: BINARY.byteLength },
    ]);
    expect(await readFile(join(server.root, 'data/out/text.txt'), 'utf8')).toBe('grüße');
    expect(await readFile(join(server.root, 'data/out/object.json'), 'utf8')).toBe('{"a":[1,2]}');
    expect((await readFile(join(server.root, 'data/out/copy.bin'))).equals(BINARY)).toBe(true);
  });

  it('creates directories recursively, renames, checks existence, stats and deletes', async () => {
    const results = await call([
      { operation: 'mkdir', path: 'work/a/b' },
      { operation: 'mkdir', path: 'work/a/b' },
      { operation: 'put', path: 'work/a/b/f.txt', content: 'x' },
      { operation: 'rename', path: 'work/a/b/f.txt', newPath: '/data/work/g.txt' },
      { operation: 'exists', path: 'work/a/b/f.txt' },
      { operation: 'exists', path: 'work/g.txt' },
      { operation: 'stat', path: 'work/g.txt' },
      { operation: 'delete', path: 'work/g.txt' },
      { operation: 'delete', path: 'work/a/b' },
      { operation: 'exists', path: 'work/a/b' },
      { operation: 'exists', path: 'work/a' },
      { operation: 'exists', path: 'missing/parent/file' },
    ]);
    expect(results).toEqual([
      { success: true, path: '/data/work/a/b' },
      { success: true, path: '/data/work/a/b' },
      { success: true, path: '/data/work/a/b/f.txt', size: 1 },
      { success: true, path: '/data/work/a/b/f.txt', newPath: '/data/work/g.txt' },
      { path: '/data/work/a/b/f.txt', exists: false },
      { path: '/data/work/g.txt', exists: true, type: 'file' },
      { name: 'g.txt', path: '/data/work/g.txt', size: 1, type: 'file', modifyTime: expect.any(String) },
      { success: true, path: '/data/work/g.txt' },
      { success: true, path: '/data/work/a/b' },
      { path: '/data/work/a/b', exists: false },
      { path: '/data/work/a', exists: true, type: 'directory' },
      { path: '/data/missing/parent/file', exists: false },
    ]);
  });

  it('stat takes a precise file time from MDTM and fails for a missing path', async () => {
    const entry = (await call({ operation: 'stat', path: 'in/notes.txt' })) as Record<string, JsonValue>;
    const mtime = (await stat(join(server.root, 'data/in/notes.txt'))).mtime;
    expect(entry.modifyTime).toBe(mtime.toISOString());
    await expect(call({ operation: 'stat', path: 'in/nope' })).rejects.toThrow(
      `${label} stat /data/in/nope failed: no such file or directory`,
    );
  });

  it('runs an array of operations on one connection and one login', async () => {
    const before = { ...server.stats };
    const results = (await call([
      { operation: 'list', path: 'in' },
      { operation: 'get', path: 'in/notes.txt' },
      { operation: 'mkdir', path: 'again' },
      { operation: 'exists', path: 'in/rows.csv' },
    ])) as JsonValue[];
    expect(results).toHaveLength(4);
    expect(server.stats.connections - before.connections).toBe(1);
    expect(server.stats.logins - before.logins).toBe(1);
  });

  it('fails a missing file with a message naming the operation and path', async () => {
    await expect(call({ operation: 'get', path: 'in/missing.txt' })).rejects.toThrow(
      new RegExp(`^${label} get /data/in/missing\\.txt failed: `),
    );
  });
});

describe('FTP paths', () => {
  let server: FtpTestServer;

  beforeAll(async () => {
    server = await startFtpServer({ password: PASSWORD, home: '/home/tester' });
    await mkdir(join(server.root, 'home/tester'), { recursive: true });
    await writeFile(join(server.root, 'home/tester/mine.txt'), 'home file');
    await seed(server.root);
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('uses absolute operation paths as they are, ignoring the URL path', async () => {
    const result = (await run(
      { operation: 'get', path: '/data/in/notes.txt' },
      { url: withPath(withUser(server.url), '/elsewhere') },
    )) as Record<string, JsonValue>;
    expect(result.path).toBe('/data/in/notes.txt');
    expect(result.content).toBe('hello\nworld');
  });

  it('refuses a file larger than the download limit', async () => {
    await expect(
      run(
        { operation: 'get', path: '/data/in/rows.csv' },
        { url: withUser(server.url), maxDownloadBytes: 5 },
      ),
    ).rejects.toThrow(/^FTP get \/data\/in\/rows\.csv failed: .*download limit/);
  });

  it('resolves relative paths under a URL path given without a trailing slash', async () => {
    const result = await run(
      { operation: 'exists', path: 'sub/inner.txt' },
      { url: withPath(withUser(server.url), '/data/in') },
    );
    expect(result).toEqual({ path: '/data/in/sub/inner.txt', exists: true, type: 'file' });
  });

  it('resolves relative paths against the login directory when the URL has no path', async () => {
    const results = (await run(
      [
        { operation: 'get', path: 'mine.txt' },
        { operation: 'mkdir', path: 'new/deeper' },
        { operation: 'put', path: 'new/deeper/made.txt', content: 'made' },
        { operation: 'list' },
      ],
      { url: withUser(server.url) },
    )) as JsonValue[];
    expect((results[0] as Record<string, JsonValue>).content).toBe('home file');
    expect((results[0] as Record<string, JsonValue>).path).toBe('mine.txt');
    expect((results[2] as Record<string, JsonValue>).path).toBe('new/deeper/made.txt');
    expect(results[3]).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'new', path: 'new' })]),
    );
    expect(await readFile(join(server.root, 'home/tester/new/deeper/made.txt'), 'utf8')).toBe('made');
  });
});

describe('FTP credentials', () => {
  let server: FtpTestServer;

  beforeAll(async () => {
    server = await startFtpServer({
      password: PASSWORD,
      loginFailureMessage: (given) => `Bad password ${given}`,
    });
    await seed(server.root);
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('takes percent-decoded credentials from the URL userinfo', async () => {
    expect(await run({ operation: 'exists', path: '/data/in' }, { url: withUser(server.url) })).toEqual({
      path: '/data/in',
      exists: true,
      type: 'directory',
    });
  });

  it('takes username and password from the system credentials when the URL has none', async () => {
    const result = await run(
      { operation: 'exists', path: '/data/in/notes.txt' },
      { url: server.url, credentials: { username: 'tester', password: PASSWORD } },
    );
    expect(result).toEqual({ path: '/data/in/notes.txt', exists: true, type: 'file' });
  });

  it('fails a wrong password with an error that does not contain it, even when the server echoes it', async () => {
    const wrong = 'Wr0ng-Secret-Value';
    const error = await failure(
      run({ operation: 'list' }, { url: server.url, credentials: { username: 'tester', password: wrong } }),
    );
    expect(error?.message).toMatch(/^FTP connect to 127\.0\.0\.1:\d+ failed: 530 /);
    expect(error?.message).not.toContain(wrong);
    const inUrl = await failure(run({ operation: 'list' }, { url: withUser(server.url, 'tester', wrong) }));
    expect(inUrl?.message).toMatch(/^FTP connect to 127\.0\.0\.1:\d+ failed: 530 /);
    expect(inUrl?.message).not.toContain(wrong);
  });
});

describe('FTPS certificate verification', () => {
  let server: FtpTestServer;

  beforeAll(async () => {
    server = await startFtpServer({ tls: 'explicit', password: PASSWORD });
    await seed(server.root);
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('refuses a self-signed server certificate unless its CA is given', async () => {
    const error = await failure(run({ operation: 'list', path: '/data' }, { url: withUser(server.url) }));
    expect(error?.message).toMatch(/^FTPS connect to 127\.0\.0\.1:\d+ failed: .*self-signed/);
  });

  it('trusts a self-signed server with ?tlsInsecure=true', async () => {
    const result = await run(
      { operation: 'exists', path: '/data/in' },
      { url: `${withUser(server.url)}?tlsInsecure=true` },
    );
    expect(result).toEqual({ path: '/data/in', exists: true, type: 'directory' });
  });

  it('fails against a plain FTP server that does not offer TLS', async () => {
    const plain = await startFtpServer({ password: PASSWORD });
    try {
      const error = await failure(
        run({ operation: 'list' }, { url: withUser(plain.url).replace(/^ftp:/, 'ftps:'), credentials: {} }),
      );
      expect(error?.message).toMatch(/^FTPS connect to 127\.0\.0\.1:\d+ failed: /);
      expect(plain.stats.logins).toBe(0);
    } finally {
      await plain.stop();
    }
  });

  it('rejects an unknown tlsMode', async () => {
    await expect(
      run({ operation: 'list' }, { url: `${withUser(server.url)}?tlsMode=sometimes` }),
    ).rejects.toThrow("Invalid FTPS URL: tlsMode must be 'explicit' or 'implicit'");
  });
});

describe('FTP abort and deadline', () => {
  /**
   * The read hook holds RETR until the test releases it, then fails the read: ftp-srv pauses the control
   * socket during RETR (so it notices a vanished client only afterwards) and crashes on a data socket
   * that is already gone if the read went ahead.
   */
  async function stalledServer(
    hold: ReturnType<typeof gate>,
    options: FtpServerOptions = {},
  ): Promise<FtpTestServer> {
    const beforeRead = async () => {
      await hold.wait();
      throw new Error('read released after the client left');
    };
    const server = await startFtpServer({ password: PASSWORD, beforeRead, ...options });
    await writeFile(join(server.root, 'big.txt'), 'payload');
    return server;
  }

  it('aborting mid-download closes the connection and rejects', async () => {
    const hold = gate();
    const server = await stalledServer(hold);
    try {
      const controller = new AbortController();
      const pending = run(
        { operation: 'get', path: '/big.txt' },
        { url: withUser(server.url), signal: controller.signal },
      );
      await hold.reached;
      controller.abort();
      const error = await failure(pending);
      expect(error?.name).toBe('AbortError');
      expect(error?.message).toBe('FTP get /big.txt aborted');
      hold.open();
      await expect.poll(() => server.stats.disconnects).toBe(1);
    } finally {
      hold.open();
      await server.stop();
    }
  });

  it('fails with a timeout when the deadline passes during an operation', async () => {
    const hold = gate();
    const server = await stalledServer(hold, { tls: 'explicit' });
    try {
      const error = await failure(
        run(
          [
            { operation: 'exists', path: '/big.txt' },
            { operation: 'get', path: '/big.txt' },
          ],
          { url: withUser(server.url), credentials: { ca: server.ca ?? '' }, deadline: Date.now() + 3_000 },
        ),
      );
      expect(error?.name).toBe('TimeoutError');
      expect(error?.message).toBe("FTPS body[1] get /big.txt timed out: the run's deadline was reached");
    } finally {
      hold.open();
      await server.stop();
    }
  });
});

describe('FTP body validation', () => {
  it('names the operation index and field of an invalid body without connecting', async () => {
    await expect(
      run(
        [
          { operation: 'get', path: 'a' },
          { operation: 'put', path: 'b' },
        ],
        { url: 'ftp://tester:pw@127.0.0.1:1/' },
      ),
    ).rejects.toThrow('Invalid FTP body: body[1].content: is required');
    await expect(run('[{"operation":"list"},]', { url: 'ftp://127.0.0.1:1/' })).rejects.toThrow(
      'Invalid FTP body: not valid JSON',
    );
  });
});

describe('LIST date parsing', () => {
  const now = new Date(Date.UTC(2024, 5, 15, 12, 0));

  it('reads recent, old, ISO-like and DOS listing dates as UTC', () => {
    expect(parseListDate('Jun 01 08:30', now)).toBe('2024-06-01T08:30:00.000Z');
    expect(parseListDate('Dec 24 18:00', now)).toBe('2023-12-24T18:00:00.000Z');
    expect(parseListDate('Mar  4  2020', now)).toBe('2020-03-04T00:00:00.000Z');
    expect(parseListDate('2021-07-09 23:15', now)).toBe('2021-07-09T23:15:00.000Z');
    expect(parseListDate('01-31-23 10:05PM', now)).toBe('2023-01-31T22:05:00.000Z');
    expect(parseListDate('01-31-23 12:05AM', now)).toBe('2023-01-31T00:05:00.000Z');
    expect(parseListDate('sometime', now)).toBeNull();
  });
});
