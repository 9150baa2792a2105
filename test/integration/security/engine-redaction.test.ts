/**
 * Issue 7, items 8 and 9: credential values never leave a run, also not as the prefix of a cut error
 * snippet, not when shorter than 4 characters, not inside file contents or file names, and not through
 * code that runs after the steps (the output transform sees redacted data). Real engine and servers.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../contract/json.ts';
import type { ResolvedSystem } from '../../../contract/wire/run-order.ts';
import { type FileRef, isFileRef } from '../../../engine/file-ref.ts';
import { type FtpTestServer, startFtpServer } from '../../support/ftp-server.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { useTestEngine } from '../../support/security-engine.ts';

const target = useHttpTarget();
const engine = useTestEngine();
let ftp: FtpTestServer;

const TOKEN = 'tok-Straddle-0123456789ABCDEF';

beforeAll(async () => {
  ftp = await startFtpServer();
});

afterAll(async () => {
  await ftp.stop();
});

function bearer(): ResolvedSystem {
  return { id: 'svc', url: target.url, authType: 'bearer', credentials: { bearerToken: TOKEN } };
}

function fileText(value: JsonValue | undefined): string {
  if (!isFileRef(value)) throw new Error(`not a file reference: ${JSON.stringify(value)}`);
  return Buffer.from((value as FileRef).contentBase64, 'base64').toString('utf8');
}

describe('redact before cutting', () => {
  it('leaves no prefix of a secret that straddles the 1000-character error snippet', async () => {
    target.route('GET', '/straddle', { status: 401, body: `${'x'.repeat(990)}${TOKEN} and more` });
    const result = await engine.run(
      { steps: [{ id: 'call', config: { url: '/straddle', systemId: 'svc' } }] },
      { systems: [bearer()] },
    );
    expect(result.status).toBe('failed');
    const everything = JSON.stringify(result);
    expect(everything).not.toContain(TOKEN.slice(0, 10));
    expect(result.stepResults[0]?.error).toContain(`${'x'.repeat(990)}<<svc_bear`);
  });
});

describe('short secrets', () => {
  it('are replaced where they are a whole token or value, and ordinary words stay intact', async () => {
    target.route('GET', '/short', (req) => ({
      status: 401,
      body: `denied ${req.headers.authorization}: password pw9 is wrong (see table pw9x, apw9)`,
    }));
    target.route('GET', '/echo-short', { body: { pwd: 'pw9', note: 'pw9', word: 'pw9x' } });
    const system: ResolvedSystem = {
      id: 'svc',
      url: target.url,
      authType: 'basic',
      credentials: { username: 'ada', password: 'pw9' },
    };
    const result = await engine.run(
      {
        steps: [
          { id: 'echo', config: { url: '/echo-short', systemId: 'svc' } },
          { id: 'fail', config: { url: '/short', systemId: 'svc' } },
        ],
      },
      { systems: [system] },
    );
    expect(result.stepResults[0]?.data).toEqual({
      pwd: '<<svc_password>>',
      note: '<<svc_password>>',
      word: 'pw9x',
    });
    expect(result.stepResults[1]?.error).toContain(
      'password <<svc_password>> is wrong (see table pw9x, apw9)',
    );
    expect(result.stepResults[1]?.error).toContain('denied Basic <<svc_password>>');
  });
});

describe('files', () => {
  it('scrubs the text content and the name of an HTTP attachment', async () => {
    target.route('GET', `/export/${TOKEN}`, {
      headers: { 'content-type': 'text/csv', 'content-disposition': 'attachment' },
      body: `id,token\n1,${TOKEN}\n`,
    });
    const result = await engine.run(
      { steps: [{ id: 'export', config: { url: `/export/<<svc_bearerToken>>`, systemId: 'svc' } }] },
      { systems: [bearer()] },
    );
    const file = result.stepResults[0]?.data;
    expect(fileText(file)).toBe('id,token\n1,<<svc_bearerToken>>\n');
    expect(file).toMatchObject({ filename: '<<svc_bearerToken>>', size: 31 });
    expect(JSON.stringify(result)).not.toContain(TOKEN);
  });

  it('scrubs FTP get content and its file reference; binary content is left as it is', async () => {
    await writeFile(join(ftp.root, 'notes.txt'), `the key is ${TOKEN}`);
    await writeFile(join(ftp.root, 'blob.bin'), Buffer.from([0, 1, 2, 255]));
    const system: ResolvedSystem = {
      id: 'files',
      url: ftp.url,
      credentials: { username: ftp.username, password: ftp.password, apiToken: TOKEN },
    };
    const result = await engine.run(
      {
        steps: [
          {
            id: 'get',
            config: {
              url: ftp.url,
              systemId: 'files',
              method: 'POST',
              body: [
                { operation: 'get', path: '/notes.txt' },
                { operation: 'get', path: '/blob.bin' },
              ],
            },
          },
        ],
      },
      { systems: [system] },
    );
    const gets = (result.stepResults[0]?.data ?? []) as Array<{ content: JsonValue; file: JsonValue }>;
    const [notes, blob] = gets;
    expect(notes?.content).toBe('the key is <<files_apiToken>>');
    expect(fileText(notes?.file)).toBe('the key is <<files_apiToken>>');
    const binary = blob?.file as unknown as FileRef;
    expect(Buffer.from(binary.contentBase64, 'base64')).toEqual(Buffer.from([0, 1, 2, 255]));
  });
});

describe('code after the steps sees redacted data', () => {
  it('gives the output transform and file artifacts no credential, however disguised', async () => {
    target.route('GET', '/echo', (req) => ({ body: { token: String(req.headers.authorization).slice(7) } }));
    const result = await engine.run(
      {
        steps: [{ id: 'echo', config: { url: '/echo', systemId: 'svc' } }],
        outputTransform: `(s) => ({
          reversed: s.echo.data.token.split('').reverse().join(''),
          __files__: { [s.echo.data.token + '.txt']: 'token=' + s.echo.data.token },
        })`,
      },
      { systems: [bearer()] },
    );
    expect(result.status).toBe('success');
    expect(result.data).toEqual({ reversed: '>>nekoTreraeb_cvs<<' });
    expect(
      result.files.map((f) => [f.fileKey, f.filename, Buffer.from(f.contentBase64, 'base64').toString()]),
    ).toEqual([['<<svc_bearerToken>>.txt', '<<svc_bearerToken>>.txt', 'token=<<svc_bearerToken>>']]);
  });

  it('gives a dataSelector redacted data too', async () => {
    target.route('GET', '/echo2', (req) => ({ body: { token: String(req.headers.authorization).slice(7) } }));
    target.route('GET', '/item', { body: {} });
    const result = await engine.run(
      {
        steps: [
          { id: 'echo', config: { url: '/echo2', systemId: 'svc' } },
          {
            id: 'each',
            dataSelector: `(s) => [s.echo.data.token.split('').reverse().join('')]`,
            config: { url: '/item', systemId: 'svc' },
          },
        ],
      },
      { systems: [bearer()] },
    );
    expect(JSON.stringify(result)).not.toContain(TOKEN.split('').reverse().join(''));
  });
});
