/** What only FTP and FTPS do; the operations all file protocols share are in file-transfer.test.ts. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeFtpStep, parseListDate } from '../../../engine/protocols/ftp.ts';
import { failure, fileStepRunner, PASSWORD, seed, withUser } from '../../support/file-transfer.ts';
import { type FtpTestServer, startFtpServer } from '../../support/ftp-server.ts';

const run = fileStepRunner(executeFtpStep);

describe('FTP credentials', () => {
  let server: FtpTestServer;

  beforeAll(async () => {
    server = await startFtpServer({
      password: PASSWORD,
      loginFailureMessage: (given) => `Bad password ${given}`,
    });
  });

  afterAll(async () => {
    await server?.stop();
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
