/** What only SFTP does; the operations all file protocols share are in file-transfer.test.ts. */
import { symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../contract/json.ts';
import { executeSftpStep } from '../../../engine/protocols/sftp.ts';
import { failure, fileStepRunner, gate, PASSWORD, seed, withUser } from '../../support/file-transfer.ts';
import { generateTestKeyPair, startSftpServer, useSftpServer } from '../../support/sftp-server.ts';

const userKey = generateTestKeyPair('key-passphrase');

const run = fileStepRunner(executeSftpStep, () => ({ url: `${withUser(server.url)}/data/` }));

const server = useSftpServer({ password: PASSWORD, publicKey: userKey.publicKey });

beforeAll(async () => {
  await seed(server.root);
  await symlink('notes.txt', join(server.root, 'data/in/link-to-notes'));
});

describe('SFTP list', () => {
  it('lists a symbolic link as a symlink', async () => {
    const result = (await run({ operation: 'list', path: 'in' })) as Record<string, JsonValue>[];
    const byName = new Map(result.map((entry) => [entry.name, entry]));
    expect(byName.get('link-to-notes')?.type).toBe('symlink');
  });

  it('lists the URL directory when the operation has no path', async () => {
    const result = (await run({ operation: 'list' })) as Record<string, JsonValue>[];
    expect(result.map((entry) => entry.path)).toContain('/data/in');
  });
});

describe('SFTP connections', () => {
  it('runs an array of operations in one SFTP session', async () => {
    const before = server.stats.sftpSessions;
    await run([
      { operation: 'list', path: 'in' },
      { operation: 'get', path: 'in/notes.txt' },
      { operation: 'exists', path: 'in/rows.csv' },
    ]);
    expect(server.stats.sftpSessions - before).toBe(1);
  });
});

describe('SFTP credentials', () => {
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

describe('SFTP deadline', () => {
  it('fails with a timeout when the deadline passes while listing', async () => {
    const hold = gate();
    const stalled = await startSftpServer({
      password: PASSWORD,
      beforeRequest: (request) => (request.kind === 'OPENDIR' ? hold.wait() : undefined),
    });
    try {
      const error = await failure(
        run({ operation: 'list', path: '/' }, { url: withUser(stalled.url), deadline: Date.now() + 2_000 }),
      );
      expect(error?.name).toBe('TimeoutError');
      expect(error?.message).toBe("SFTP list / timed out: the run's deadline was reached");
    } finally {
      hold.open();
      await stalled.stop();
    }
  });
});
