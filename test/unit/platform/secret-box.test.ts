import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  deriveKey,
  loadMasterKey,
  MASTER_KEY_FILE,
  parseMasterKey,
  SecretBox,
  SecretBoxError,
} from '../../../platform/secret-box.ts';

const PLAIN = Buffer.from('{"apiKey":"sk-live-very-secret"}');

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  it('opens what it sealed, and the sealed bytes hold neither the plaintext nor a repeated IV', () => {
    const first = box.seal(PLAIN);
    const second = box.seal(PLAIN);
    expect(box.open(first)).toEqual(PLAIN);
    expect(first.includes(PLAIN)).toBe(false);
    expect(first[0]).toBe(1);
    expect(first.length).toBe(1 + 12 + 16 + PLAIN.length);
    expect(first.subarray(1, 13).equals(second.subarray(1, 13))).toBe(false);
  });

  it('refuses a different key with a clear error that contains no data', () => {
    const sealed = box.seal(PLAIN);
    const error = errorOf(() => new SecretBox(randomBytes(32)).open(sealed));
    expect(error).toBeInstanceOf(SecretBoxError);
    expect(error.message).toMatch(/master key|altered/);
    expect(error.message).not.toContain('sk-live');
  });

  it('refuses altered ciphertext, tag or version byte', () => {
    const sealed = box.seal(PLAIN);
    for (const index of [sealed.length - 1, 20, 0]) {
      const altered = Buffer.from(sealed);
      altered[index] = (altered[index] ?? 0) ^ 1;
      expect(() => box.open(altered)).toThrow(SecretBoxError);
    }
    expect(() => box.open(sealed.subarray(0, 10))).toThrow(/truncated/);
  });

  it('binds sealed data to its context', () => {
    const sealed = box.seal(PLAIN, 'secret/a');
    expect(box.open(sealed, 'secret/a')).toEqual(PLAIN);
    expect(() => box.open(sealed, 'secret/b')).toThrow(SecretBoxError);
    expect(() => box.open(sealed)).toThrow(SecretBoxError);
  });

  it('needs a 32-byte key', () => {
    expect(() => new SecretBox(randomBytes(16))).toThrow(/32-byte/);
  });
});

describe('deriveKey', () => {
  it('gives a stable, distinct key per purpose', () => {
    const master = randomBytes(32);
    const files = deriveKey(master, 'file-urls');
    expect(files).toHaveLength(32);
    expect(deriveKey(master, 'file-urls').equals(files)).toBe(true);
    expect(deriveKey(master, 'notifications').equals(files)).toBe(false);
    expect(files.equals(master)).toBe(false);
  });
});

describe('loadMasterKey', () => {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-key-'));
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('accepts KUBEGLUE_MASTER_KEY as 64 hex characters or as base64 of 32 bytes', async () => {
    const key = randomBytes(32);
    expect((await loadMasterKey({ masterKey: key.toString('hex'), dataDir })).equals(key)).toBe(true);
    expect((await loadMasterKey({ masterKey: key.toString('base64'), dataDir })).equals(key)).toBe(true);
    expect((await loadMasterKey({ masterKey: key.toString('base64url'), dataDir })).equals(key)).toBe(true);
    expect(parseMasterKey(` ${key.toString('hex')}\n`)?.equals(key)).toBe(true);
  });

  it('refuses any other key, explaining the format without echoing the value', async () => {
    for (const bad of ['hunter2-not-a-key', 'ab'.repeat(31), randomBytes(16).toString('base64'), '']) {
      const error = await loadMasterKey({ masterKey: bad, dataDir }).catch((e: Error) => e);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(/KUBEGLUE_MASTER_KEY must be 32 bytes .*hex.*base64/);
      if (bad) expect((error as Error).message).not.toContain(bad);
    }
  });

  it('creates a private key file once, says so, and reuses it on later starts', async () => {
    const lines: string[] = [];
    const first = await loadMasterKey({ dataDir, log: (line) => lines.push(line) });
    const path = join(dataDir, MASTER_KEY_FILE);
    expect(first).toHaveLength(32);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(path);
    expect(lines[0]).toMatch(/losing it makes stored credentials unreadable/);
    expect(lines[0]).not.toContain(first.toString('hex'));

    const again = await loadMasterKey({ dataDir, log: (line) => lines.push(line) });
    expect(again.equals(first)).toBe(true);
    expect(lines).toHaveLength(1);
    expect((await readFile(path, 'utf8')).trim()).toBe(first.toString('hex'));
  });

  it('creates the data directory and agrees on one key when started twice at once', async () => {
    const nested = join(dataDir, 'a', 'b');
    const keys = await Promise.all([1, 2, 3, 4].map(() => loadMasterKey({ dataDir: nested })));
    for (const key of keys) expect(key.equals(keys[0] as Buffer)).toBe(true);
  });

  it('refuses a key file with the wrong content', async () => {
    await writeFile(join(dataDir, MASTER_KEY_FILE), 'not a key\n', { mode: 0o600 });
    await expect(loadMasterKey({ dataDir })).rejects.toThrow(/master key file .* must hold/);
  });
});
