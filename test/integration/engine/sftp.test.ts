import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../contract/json.ts';
import { fileRefFromBytes } from '../../../engine/file-ref.ts';
import { executeSftpStep } from '../../../engine/protocols/sftp.ts';
import { generateTestKeyPair, type SftpTestServer, startSftpServer } from '../../support/sftp-server.ts';

const PASSWORD = 'p@ss:w/rd%20x';
const BINARY = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0xfe, 0x01]);
const userKey = generateTestKeyPair('key-passphrase');

let server: SftpTestServer;

function withUser(url: string, user = 'tester', password = PASSWORD): string {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(user);
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

interface RunOptions {
  url?: string;
  credentials?: Record<string, string>;
  signal?: AbortSignal;
  deadline?: number;
  maxDownloadBytes?: number;
}

function run(body: unknown, options: RunOptions = {}): Promise<JsonValue> {
  return executeSftpStep({
    url: options.url ?? `${withUser(server.url)}/data/`,
    body,
    credentials: options.credentials ?? {},
    signal: options.signal ?? new AbortController().signal,
    deadline: options.deadline ?? Date.now() + 20_000,
    ...(options.maxDownloadBytes !== undefined ? { maxDownloadBytes: options.maxDownloadBytes } : {}),
  });
}

async function seed(root: string): Promise<void> {
  await mkdir(join(root, 'data/in/sub'), { recursive: true });
  await writeFile(join(root, 'data/in/data.json'), '{"items":[1,2],"ok":true}');
  await writeFile(join(root, 'data/in/rows.csv'), 'id,name\n1,Ada\n2,Linus\n');
  await writeFile(join(root, 'data/in/notes.txt'), 'hello\nworld');
  await writeFile(join(root, 'data/in/sniffed.log'), '[{"a":1}]');
  await writeFile(join(root, 'data/in/blob.bin'), BINARY);
  await writeFile(join(root, 'data/in/sub/inner.txt'), 'inner');
  await symlink('notes.txt', join(root, 'data/in/link-to-notes'));
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

beforeAll(async () => {
  server = await startSftpServer({ password: PASSWORD, publicKey: userKey.publicKey });
  await seed(server.root);
});

afterAll(async () => {
  await server?.stop();
});

describe('SFTP list', () => {
  it('lists a directory with names, paths, sizes, types and ISO modify times', async () => {
    const result = (await run({ operation: 'list', path: 'in' })) as Record<string, JsonValue>[];
    const byName = new Map(result.map((entry) => [entry.name, entry]));
    expect(byName.get('notes.txt')).toEqual({
      name: 'notes.txt',
      path: '/data/in/notes.txt',
      size: 11,
      type: 'file',
      modifyTime: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
    expect(byName.get('sub')?.type).toBe('directory');
    expect(byName.get('link-to-notes')?.type).toBe('symlink');
    const mtime = (await stat(join(server.root, 'data/in/notes.txt'))).mtime;
    expect(Date.parse(String(byName.get('notes.txt')?.modifyTime))).toBe(
      Math.floor(mtime.getTime() / 1000) * 1000,
    );
  });

  it('lists the URL directory when the operation has no path', async () => {
    const result = (await run({ operation: 'list' })) as Record<string, JsonValue>[];
    expect(result.map((entry) => entry.path)).toContain('/data/in');
  });
});

describe('SFTP get', () => {
  it('parses a .json file and attaches the raw bytes as a file reference', async () => {
    const result = (await run({ operation: 'get', path: 'in/data.json' })) as Record<string, JsonValue>;
    const bytes = Buffer.from('{"items":[1,2],"ok":true}');
    expect(result).toEqual({
      path: '/data/in/data.json',
      size: bytes.byteLength,
      contentType: 'application/json',
      content: { items: [1, 2], ok: true },
      file: { ...fileRefFromBytes(bytes, 'data.json', 'application/json') },
    });
  });

  it('parses a .csv file into row objects keyed by the header row', async () => {
    const result = (await run({ operation: 'get', path: 'in/rows.csv' })) as Record<string, JsonValue>;
    expect(result.contentType).toBe('text/csv');
    expect(result.content).toEqual([
      { id: '1', name: 'Ada' },
      { id: '2', name: 'Linus' },
    ]);
  });

  it('returns text files as text and JSON-looking text as parsed JSON', async () => {
    const [notes, sniffed] = (await run([
      { operation: 'get', path: 'in/notes.txt' },
      { operation: 'get', path: 'in/sniffed.log' },
    ])) as Record<string, JsonValue>[];
    expect(notes?.content).toBe('hello\nworld');
    expect(notes?.contentType).toBe('text/plain');
    expect(sniffed?.content).toEqual([{ a: 1 }]);
  });

  it('returns binary content as null with only the file reference', async () => {
    const result = (await run({ operation: 'get', path: 'in/blob.bin' })) as Record<string, JsonValue>;
    expect(result.content).toBeNull();
    expect(result.contentType).toBe('application/octet-stream');
    const file = result.file as Record<string, JsonValue>;
    expect(Buffer.from(String(file.contentBase64), 'base64').equals(BINARY)).toBe(true);
    expect(file.size).toBe(BINARY.byteLength);
  });

  it('refuses a file larger than the download limit', async () => {
    await expect(run({ operation: 'get', path: 'in/rows.csv' }, { maxDownloadBytes: 5 })).rejects.toThrow(
      /SFTP get \/data\/in\/rows\.csv failed: .*download limit/,
    );
  });

  it('fails a missing file with a message naming the operation and path', async () => {
    await expect(run({ operation: 'get', path: 'in/missing.txt' })).rejects.toThrow(
      /^SFTP get \/data\/in\/missing\.txt failed: /,
    );
  });
});

describe('SFTP put', () => {
  it('writes strings as UTF-8, objects as JSON and file references as their bytes', async () => {
    const results = await run([
      { operation: 'mkdir', path: 'out' },
      { operation: 'put', path: 'out/text.txt', content: 'grüße' },
      { operation: 'put', path: 'out/object.json', content: { a: [1, 2] } },
      { operation: 'put', path: 'out/copy.bin', content: { ...fileRefFromBytes(BINARY, 'x.bin', 'a/b') } },
      { operation: 'put', path: 'out/b64.bin', content: BINARY.toString('base64'), encoding: 'base64' },
    ]);
    expect(results).toEqual([
      { success: true, path: '/data/out' },
      { success: true, path: '/data/out/text.txt', size: Buffer.byteLength('grüße') },
      { success: true, path: '/data/out/object.json', size: Buffer.byteLength('{"a":[1,2]}') },
      { success: true, path: '/data/out/copy.bin', size: BINARY.byteLength },
      { success: true, path: '/data/out/b64.bin', size: BINARY.byteLength },
    ]);
    expect(await readFile(join(server.root, 'data/out/text.txt'), 'utf8')).toBe('grüße');
    expect(await readFile(join(server.root, 'data/out/object.json'), 'utf8')).toBe('{"a":[1,2]}');
    expect((await readFile(join(server.root, 'data/out/copy.bin'))).equals(BINARY)).toBe(true);
    expect((await readFile(join(server.root, 'data/out/b64.bin'))).equals(BINARY)).toBe(true);
  });
});

describe('SFTP file management', () => {
  it('creates directories recursively, renames, deletes files and empty directories', async () => {
    const results = await run([
      { operation: 'mkdir', path: 'work/a/b' },
      { operation: 'mkdir', path: 'work/a/b' },
      { operation: 'put', path: 'work/a/b/f.txt', content: 'x' },
      { operation: 'rename', path: 'work/a/b/f.txt', newPath: '/data/work/g.txt' },
      { operation: 'exists', path: 'work/a/b/f.txt' },
      { operation: 'exists', path: 'work/g.txt' },
      { operation: 'delete', path: 'work/g.txt' },
      { operation: 'delete', path: 'work/a/b' },
      { operation: 'exists', path: 'work/a/b' },
      { operation: 'exists', path: 'work/a' },
    ]);
    expect(results).toEqual([
      { success: true, path: '/data/work/a/b' },
      { success: true, path: '/data/work/a/b' },
      { success: true, path: '/data/work/a/b/f.txt', size: 1 },
      { success: true, path: '/data/work/a/b/f.txt', newPath: '/data/work/g.txt' },
      { path: '/data/work/a/b/f.txt', exists: false },
      { path: '/data/work/g.txt', exists: true, type: 'file' },
      { success: true, path: '/data/work/g.txt' },
      { success: true, path: '/data/work/a/b' },
      { path: '/data/work/a/b', exists: false },
      { path: '/data/work/a', exists: true, type: 'directory' },
    ]);
  });

  it('stat returns the list-entry shape and fails for a missing path', async () => {
    expect(await run({ operation: 'stat', path: 'in/rows.csv' })).toEqual({
      name: 'rows.csv',
      path: '/data/in/rows.csv',
      size: 22,
      type: 'file',
      modifyTime: expect.any(String),
    });
    await expect(run({ operation: 'stat', path: 'in/nope' })).rejects.toThrow(
      'SFTP stat /data/in/nope failed: no such file or directory',
    );
  });
});

describe('SFTP connections and paths', () => {
  it('runs an array of operations on one connection and login', async () => {
    const before = { ...server.stats };
    const results = (await run([
      { operation: 'list', path: 'in' },
      { operation: 'get', path: 'in/notes.txt' },
      { operation: 'exists', path: 'in/rows.csv' },
    ])) as JsonValue[];
    expect(results).toHaveLength(3);
    expect(server.stats.connections - before.connections).toBe(1);
    expect(server.stats.logins - before.logins).toBe(1);
    expect(server.stats.sftpSessions - before.sftpSessions).toBe(1);
  });

  it('uses absolute operation paths as they are, ignoring the URL path', async () => {
    const result = (await run(
      { operation: 'get', path: '/data/in/notes.txt' },
      { url: `${withUser(server.url)}/elsewhere` },
    )) as Record<string, JsonValue>;
    expect(result.path).toBe('/data/in/notes.txt');
    expect(result.content).toBe('hello\nworld');
  });

  it('resolves relative paths under a URL path given without a trailing slash', async () => {
    const result = (await run(
      { operation: 'exists', path: 'sub/inner.txt' },
      { url: `${withUser(server.url)}/data/in` },
    )) as Record<string, JsonValue>;
    expect(result).toEqual({ path: '/data/in/sub/inner.txt', exists: true, type: 'file' });
  });

  it('resolves relative paths against the login directory when the URL has no path', async () => {
    const homed = await startSftpServer({ password: PASSWORD, home: '/home/tester' });
    try {
      await mkdir(join(homed.root, 'home/tester'), { recursive: true });
      await writeFile(join(homed.root, 'home/tester/mine.txt'), 'home file');
      const url = withUser(homed.url);
      const results = (await run(
        [
          { operation: 'get', path: 'mine.txt' },
          { operation: 'mkdir', path: 'new' },
          { operation: 'put', path: 'new/made.txt', content: 'made' },
        ],
        { url },
      )) as Record<string, JsonValue>[];
      expect(results[0]?.content).toBe('home file');
      expect(results[0]?.path).toBe('mine.txt');
      expect(results[2]?.path).toBe('new/made.txt');
      expect(await readFile(join(homed.root, 'home/tester/new/made.txt'), 'utf8')).toBe('made');
    } finally {
      await homed.stop();
    }
  });
});

describe('SFTP credentials', () => {
  it('takes percent-decoded credentials from the URL userinfo', async () => {
    // PASSWORD contains @ : / and a literal "%20"; encodeURIComponent in withUser makes them safe.
    await expect(run({ operation: 'exists', path: 'in' })).resolves.toEqual({
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

  it('authenticates with a private key and its passphrase', async () => {
    const keyOnly = await startSftpServer({ password: null, publicKey: userKey.publicKey });
    try {
      const before = keyOnly.stats.failedLogins;
      const result = await run(
        { operation: 'list', path: '/' },
        {
          url: keyOnly.url,
          credentials: { username: 'tester', privateKey: userKey.privateKey, passphrase: 'key-passphrase' },
        },
      );
      expect(result).toEqual([]);
      expect(keyOnly.stats.failedLogins).toBe(before);
    } finally {
      await keyOnly.stop();
    }
  });

  it('accepts a private key whose line breaks arrive as literal \\n', async () => {
    const flattened = userKey.privateKey.replace(/\n/g, '\\n');
    const result = await run(
      { operation: 'exists', path: '/data' },
      {
        url: server.url,
        credentials: { username: 'tester', privateKey: flattened, passphrase: 'key-passphrase' },
      },
    );
    expect(result).toEqual({ path: '/data', exists: true, type: 'directory' });
  });

  it('fails a wrong password with an error that does not contain it', async () => {
    const wrong = 'Wr0ng-Secret-Value';
    const error = await run(
      { operation: 'list' },
      { url: server.url, credentials: { username: 'tester', password: wrong } },
    ).then(
      () => undefined,
      (caught: unknown) => caught as Error,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error?.message).toMatch(/^SFTP connect to 127\.0\.0\.1:\d+ failed: /);
    expect(error?.message).not.toContain(wrong);
  });

  it('answers keyboard-interactive password prompts with the password', async () => {
    const prompting = await startSftpServer({ password: PASSWORD, passwordVia: 'keyboard-interactive' });
    try {
      expect(await run({ operation: 'list', path: '/' }, { url: withUser(prompting.url) })).toEqual([]);
      expect(prompting.stats.failedLogins).toBe(0);
    } finally {
      await prompting.stop();
    }
  });

  it('fails without a username before connecting', async () => {
    await expect(run({ operation: 'list' }, { url: server.url })).rejects.toThrow(/SFTP needs a username/);
  });

  it('checks the host key against a configured fingerprint', async () => {
    const url = `${withUser(server.url)}/data`;
    await expect(
      run(
        { operation: 'exists', path: 'in' },
        { url: `${url}?hostFingerprint=${encodeURIComponent(server.hostKeyFingerprint)}` },
      ),
    ).resolves.toMatchObject({ exists: true });
    await expect(
      run(
        { operation: 'exists', path: 'in' },
        { url, credentials: { hostFingerprint: 'SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } },
      ),
    ).rejects.toThrow(/^SFTP connect to .* failed: .*Host denied/);
  });
});

describe('SFTP body validation', () => {
  it('names the operation index and field of an invalid body', async () => {
    await expect(
      run(
        JSON.stringify([
          { operation: 'list', path: 'in' },
          { operation: 'rename', path: 'a' },
        ]),
      ),
    ).rejects.toThrow(/^Invalid SFTP body: body\[1\]\.newPath: /);
    await expect(run({ operation: 'copy', path: 'a' })).rejects.toThrow(
      /^Invalid SFTP body: body\.operation: /,
    );
    await expect(run('{not json')).rejects.toThrow('Invalid SFTP body: not valid JSON');
  });

  it('accepts the body as a JSON string with a case-insensitive operation name', async () => {
    expect(await run('{"operation":"EXISTS","path":"in"}')).toEqual({
      path: '/data/in',
      exists: true,
      type: 'directory',
    });
  });
});

describe('SFTP abort and deadline', () => {
  it('aborting mid-download closes the connection and rejects', async () => {
    const hold = gate();
    const stalled = await startSftpServer({
      password: PASSWORD,
      beforeRequest: (request) => (request.kind === 'READ' ? hold.wait() : undefined),
    });
    try {
      await writeFile(join(stalled.root, 'big.txt'), 'payload');
      const controller = new AbortController();
      const pending = run(
        { operation: 'get', path: '/big.txt' },
        { url: withUser(stalled.url), signal: controller.signal },
      );
      await hold.reached;
      controller.abort();
      const error = await pending.then(
        () => undefined,
        (caught: unknown) => caught as Error,
      );
      expect(error?.name).toBe('AbortError');
      expect(error?.message).toBe('SFTP get /big.txt aborted');
      await expect.poll(() => stalled.stats.disconnects).toBe(1);
    } finally {
      hold.open();
      await stalled.stop();
    }
  });

  it('fails with a timeout when the deadline passes during an operation', async () => {
    const hold = gate();
    const stalled = await startSftpServer({
      password: PASSWORD,
      beforeRequest: (request) => (request.kind === 'OPENDIR' ? hold.wait() : undefined),
    });
    try {
      const pending = run(
        { operation: 'list', path: '/' },
        { url: withUser(stalled.url), deadline: Date.now() + 2_000 },
      );
      const error = await pending.then(
        () => undefined,
        (caught: unknown) => caught as Error,
      );
      expect(error?.name).toBe('TimeoutError');
      expect(error?.message).toBe("SFTP list / timed out: the run's deadline was reached");
    } finally {
      hold.open();
      await stalled.stop();
    }
  });

  it('does not connect when the signal is already aborted', async () => {
    const before = server.stats.connections;
    const controller = new AbortController();
    controller.abort();
    await expect(run({ operation: 'list' }, { signal: controller.signal })).rejects.toThrow(/aborted/);
    expect(server.stats.connections).toBe(before);
  });
});
