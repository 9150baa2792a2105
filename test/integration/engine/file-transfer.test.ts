/**
 * The file operations every file protocol offers, against each one's real server: FTP, FTPS both ways
 * and SFTP. What only one protocol does is tested in ftp.test.ts and sftp.test.ts.
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../contract/json.ts';
import { fileRefFromBytes } from '../../../engine/file-ref.ts';
import {
  BINARY,
  DATA_JSON_GET,
  DIRECTORY_ROUND,
  failure,
  fileStepRunner,
  gate,
  PASSWORD,
  seed,
  TRANSFER_PROTOCOLS,
  type TransferServer,
  withPath,
  withUser,
} from '../../support/file-transfer.ts';

/** The time as a listing or stat of the given resolution shows it. */
function at(time: Date, resolutionMs: number): string {
  return new Date(Math.floor(time.getTime() / resolutionMs) * resolutionMs).toISOString();
}

describe.each(TRANSFER_PROTOCOLS)('$name operations', (protocol) => {
  const { label } = protocol;
  let server: TransferServer;
  let baseUrl: string;

  const run = fileStepRunner(protocol.execute);
  const call = fileStepRunner(protocol.execute, () => ({ url: baseUrl, credentials: server.credentials }));

  /** What `get` gives for each path, in one body. */
  const getAll = async (...paths: string[]) =>
    (await call(paths.map((path) => ({ operation: 'get', path })))) as Record<string, JsonValue>[];

  beforeAll(async () => {
    server = await protocol.start();
    await seed(server.root);
    baseUrl = withPath(withUser(server.url), '/data/');
  });

  afterAll(async () => {
    await server?.stop();
  });

  describe('list', () => {
    it('lists a directory with names, paths, sizes, types and modify times', async () => {
      const result = (await call({ operation: 'list', path: 'in' })) as Record<string, JsonValue>[];
      const byName = new Map(result.map((entry) => [entry.name, entry]));
      const mtime = (await stat(join(server.root, 'data/in/notes.txt'))).mtime;
      expect(byName.get('notes.txt')).toEqual({
        name: 'notes.txt',
        path: '/data/in/notes.txt',
        size: 11,
        type: 'file',
        modifyTime: at(mtime, protocol.timeResolutionMs.list),
      });
      expect(byName.get('old.txt')?.modifyTime).toBe(protocol.oldFileListTime);
      expect(byName.get('sub')?.type).toBe('directory');
    });
  });

  describe('get', () => {
    it('parses a .json file and attaches the raw bytes as a file reference', async () => {
      const result = (await call({ operation: 'get', path: 'in/data.json' })) as Record<string, JsonValue>;
      expect(result).toEqual(DATA_JSON_GET);
    });

    it('parses .csv and .tsv files into row objects keyed by the header row', async () => {
      const [csv, tsv] = await getAll('in/rows.csv', 'in/tabs.tsv');
      expect(csv?.contentType).toBe('text/csv');
      expect(csv?.content).toEqual([
        { id: '1', name: 'Ada' },
        { id: '2', name: 'Linus' },
      ]);
      expect(tsv?.content).toEqual([{ id: '1', name: 'Ada' }]);
    });

    it('returns text files as text and JSON-looking text as parsed JSON', async () => {
      const [notes, sniffed] = await getAll('in/notes.txt', 'in/sniffed.log');
      expect(notes?.content).toBe('hello\nworld');
      expect(notes?.contentType).toBe('text/plain');
      expect(sniffed?.content).toEqual([{ a: 1 }]);
    });

    it('returns binary content as null with only the file reference', async () => {
      const result = (await call({ operation: 'get', path: 'in/blob.bin' })) as Record<string, JsonValue>;
      expect(result.content).toBeNull();
      expect(result.contentType).toBe('application/octet-stream');
      const file = result.file as Record<string, JsonValue>;
      expect(Buffer.from(String(file.contentBase64), 'base64').equals(BINARY)).toBe(true);
      expect(file.size).toBe(BINARY.byteLength);
    });

    it('refuses a file larger than the download limit', async () => {
      await expect(
        run(
          { operation: 'get', path: '/data/in/rows.csv' },
          { url: withUser(server.url), credentials: server.credentials, maxDownloadBytes: 5 },
        ),
      ).rejects.toThrow(new RegExp(`^${label} get /data/in/rows\\.csv failed: .*download limit`));
    });

    it('fails a missing file with a message naming the operation and path', async () => {
      await expect(call({ operation: 'get', path: 'in/missing.txt' })).rejects.toThrow(
        new RegExp(`^${label} get /data/in/missing\\.txt failed: `),
      );
    });
  });

  describe('put and file management', () => {
    it('puts strings as UTF-8, objects as JSON, base64 and file references as their bytes', async () => {
      const results = await call([
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

    it.each([
      { operation: 'put', path: 'in/rows.csv', content: 'overwritten' },
      { operation: 'delete', path: 'in/rows.csv' },
      { operation: 'rename', path: 'in/rows.csv', newPath: 'in/moved.csv' },
      { operation: 'mkdir', path: 'refused' },
    ])('refuses $operation with modify: false before it connects, and reads as before', async (write) => {
      const logins = server.stats.logins;
      const before = await readFile(join(server.root, 'data/in/rows.csv'), 'utf8');
      await expect(call([{ operation: 'exists', path: 'in' }, write], { modify: false })).rejects.toThrow(
        `${label} body[1] ${write.operation} refused: the step has modify: false, which allows only list, get, ` +
          'exists and stat; set modify: true on the step to put, delete, rename or mkdir',
      );
      expect(server.stats.logins).toBe(logins);
      expect(await readFile(join(server.root, 'data/in/rows.csv'), 'utf8')).toBe(before);
      expect(await call({ operation: 'stat', path: 'in/rows.csv' }, { modify: false })).toMatchObject({
        path: '/data/in/rows.csv',
        type: 'file',
      });
    });

    it('creates directories recursively, renames, checks existence, stats and deletes', async () => {
      expect(await call(DIRECTORY_ROUND.body)).toEqual(DIRECTORY_ROUND.results);
    });

    it('stat returns the list-entry shape with the file time and fails for a missing path', async () => {
      const mtime = (await stat(join(server.root, 'data/in/rows.csv'))).mtime;
      expect(await call({ operation: 'stat', path: 'in/rows.csv' })).toEqual({
        name: 'rows.csv',
        path: '/data/in/rows.csv',
        size: 22,
        type: 'file',
        modifyTime: at(mtime, protocol.timeResolutionMs.stat),
      });
      await expect(call({ operation: 'stat', path: 'in/nope' })).rejects.toThrow(
        `${label} stat /data/in/nope failed: no such file or directory`,
      );
    });
  });

  describe('connections and paths', () => {
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

    it('uses absolute operation paths as they are, ignoring the URL path', async () => {
      const result = (await call(
        { operation: 'get', path: '/data/in/notes.txt' },
        { url: withPath(withUser(server.url), '/elsewhere') },
      )) as Record<string, JsonValue>;
      expect(result.path).toBe('/data/in/notes.txt');
      expect(result.content).toBe('hello\nworld');
    });

    it('resolves relative paths under a URL path given without a trailing slash', async () => {
      const result = await call(
        { operation: 'exists', path: 'sub/inner.txt' },
        { url: withPath(withUser(server.url), '/data/in') },
      );
      expect(result).toEqual({ path: '/data/in/sub/inner.txt', exists: true, type: 'file' });
    });

    it('resolves relative paths against the login directory when the URL has no path', async () => {
      const homed = await protocol.start({ home: '/home/tester' });
      try {
        await mkdir(join(homed.root, 'home/tester'), { recursive: true });
        await writeFile(join(homed.root, 'home/tester/mine.txt'), 'home file');
        const results = (await run(
          [
            { operation: 'get', path: 'mine.txt' },
            { operation: 'mkdir', path: 'new/deeper' },
            { operation: 'put', path: 'new/deeper/made.txt', content: 'made' },
            { operation: 'list' },
          ],
          { url: withUser(homed.url), credentials: homed.credentials },
        )) as JsonValue[];
        expect((results[0] as Record<string, JsonValue>).content).toBe('home file');
        expect((results[0] as Record<string, JsonValue>).path).toBe('mine.txt');
        expect((results[2] as Record<string, JsonValue>).path).toBe('new/deeper/made.txt');
        expect(results[3]).toEqual(
          expect.arrayContaining([expect.objectContaining({ name: 'new', path: 'new' })]),
        );
        expect(await readFile(join(homed.root, 'home/tester/new/deeper/made.txt'), 'utf8')).toBe('made');
      } finally {
        await homed.stop();
      }
    });
  });

  describe('credentials', () => {
    it('takes percent-decoded credentials from the URL userinfo', async () => {
      expect(await call({ operation: 'exists', path: '/data/in' }, { url: withUser(server.url) })).toEqual({
        path: '/data/in',
        exists: true,
        type: 'directory',
      });
    });

    it('takes username and password from the system credentials when the URL has none', async () => {
      const result = await call(
        { operation: 'exists', path: '/data/in/notes.txt' },
        { url: server.url, credentials: { ...server.credentials, username: 'tester', password: PASSWORD } },
      );
      expect(result).toEqual({ path: '/data/in/notes.txt', exists: true, type: 'file' });
    });

    it('fails a wrong password with an error that does not contain it', async () => {
      const wrong = 'Wr0ng-Secret-Value';
      const refused = new RegExp(`^${label} connect to 127\\.0\\.0\\.1:\\d+ failed: `);
      const error = await failure(
        call(
          { operation: 'list' },
          { url: server.url, credentials: { ...server.credentials, username: 'tester', password: wrong } },
        ),
      );
      expect(error).toBeInstanceOf(Error);
      expect(error?.message).toMatch(refused);
      expect(error?.message).not.toContain(wrong);
      const inUrl = await failure(
        call({ operation: 'list' }, { url: withUser(server.url, 'tester', wrong) }),
      );
      expect(inUrl?.message).toMatch(refused);
      expect(inUrl?.message).not.toContain(wrong);
    });
  });

  describe('abort and deadline', () => {
    it('aborting mid-download closes the connection and rejects', async () => {
      const hold = gate();
      const stalled = await protocol.start({ beforeRead: hold.wait });
      try {
        await writeFile(join(stalled.root, 'big.txt'), 'payload');
        const controller = new AbortController();
        const pending = run(
          { operation: 'get', path: '/big.txt' },
          { url: withUser(stalled.url), credentials: stalled.credentials, signal: controller.signal },
        );
        await hold.reached;
        controller.abort();
        const error = await failure(pending);
        expect(error?.name).toBe('AbortError');
        expect(error?.message).toBe(`${label} get /big.txt aborted`);
        if (!protocol.seesDisconnectDuringRead) hold.open();
        await expect.poll(() => stalled.stats.disconnects).toBe(1);
      } finally {
        hold.open();
        await stalled.stop();
      }
    });

    it('fails with a timeout when the deadline passes during an operation', async () => {
      const hold = gate();
      const stalled = await protocol.start({ beforeRead: hold.wait });
      try {
        await writeFile(join(stalled.root, 'big.txt'), 'payload');
        const error = await failure(
          run(
            [
              { operation: 'exists', path: '/big.txt' },
              { operation: 'get', path: '/big.txt' },
            ],
            { url: withUser(stalled.url), credentials: stalled.credentials, deadline: Date.now() + 3_000 },
          ),
        );
        expect(error?.name).toBe('TimeoutError');
        expect(error?.message).toBe(
          `${label} body[1] get /big.txt timed out: the run's deadline was reached`,
        );
      } finally {
        hold.open();
        await stalled.stop();
      }
    });

    it('does not connect when the signal is already aborted', async () => {
      const before = server.stats.connections;
      const controller = new AbortController();
      controller.abort();
      await expect(call({ operation: 'list' }, { signal: controller.signal })).rejects.toThrow(/aborted/);
      expect(server.stats.connections).toBe(before);
    });
  });

  describe('body', () => {
    it('names the operation index and field of an invalid body without connecting', async () => {
      const unreachable = new URL(withUser(server.url, 'tester', 'pw'));
      unreachable.port = '1';
      const url = unreachable.toString();
      await expect(
        run(
          [
            { operation: 'get', path: 'a' },
            { operation: 'put', path: 'b' },
          ],
          { url },
        ),
      ).rejects.toThrow(`Invalid ${label} body: body[1].content: is required`);
      await expect(
        run(
          JSON.stringify([
            { operation: 'list', path: 'in' },
            { operation: 'rename', path: 'a' },
          ]),
          { url },
        ),
      ).rejects.toThrow(new RegExp(`^Invalid ${label} body: body\\[1\\]\\.newPath: `));
      await expect(run({ operation: 'copy', path: 'a' }, { url })).rejects.toThrow(
        new RegExp(`^Invalid ${label} body: body\\.operation: `),
      );
      await expect(run('[{"operation":"list"},]', { url })).rejects.toThrow(
        `Invalid ${label} body: not valid JSON`,
      );
      await expect(run('{not json', { url })).rejects.toThrow(`Invalid ${label} body: not valid JSON`);
    });

    it('accepts the body as a JSON string with a case-insensitive operation name', async () => {
      expect(await call('{"operation":"EXISTS","path":"in"}')).toEqual({
        path: '/data/in',
        exists: true,
        type: 'directory',
      });
    });
  });
});
