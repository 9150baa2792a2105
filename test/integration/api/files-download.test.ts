import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileDownloadHandlers } from '../../../api/routes/files.ts';
import { registerOperations } from '../../../api/routes/register.ts';
import { buildServer } from '../../../api/server.ts';
import { FileUrlSigner, fileDownloadInfo, withDownloadUrls } from '../../../runs/file-urls.ts';
import { openStore, type RunFileInput, type Store } from '../../../store/index.ts';
import { catalogError } from '../../support/api-error.ts';

const PUBLIC_BASE = 'https://kubeglue.example';
const key = randomBytes(32);
let clock = Date.parse('2026-03-01T10:00:00.000Z');
const signer = new FileUrlSigner({ key, baseUrl: `${PUBLIC_BASE}/`, now: () => clock });

const RUN_ID = 'run:files-1';
const SPECIAL_KEY = "report #1 (final) 100%?&x=ü 'q' + ✓.csv";
const files: RunFileInput[] = [
  {
    fileKey: 'hello.txt',
    filename: 'hello.txt',
    contentType: 'text/plain; charset=utf-8',
    content: Buffer.from('hello, files\n'),
  },
  {
    fileKey: SPECIAL_KEY,
    filename: SPECIAL_KEY,
    contentType: 'text/csv',
    content: Buffer.from('a,b\n1,2\n'),
  },
  {
    fileKey: 'blob.bin',
    filename: 'blob.bin',
    contentType: 'application/octet-stream',
    content: Uint8Array.from([0, 1, 2, 253, 254, 255]),
  },
];

let store: Store;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  store = await openStore({ driver: 'sqlite', path: ':memory:' });
  await store.insertRun({
    runId: RUN_ID,
    toolId: 'tool-a',
    status: 'running',
    requestSource: 'api',
    systemIds: [],
    metadata: { startedAt: '2026-03-01T10:00:00.000Z' },
  });
  await store.finishRun(RUN_ID, {
    status: 'success',
    completedAt: '2026-03-01T10:00:01.000Z',
    durationMs: 1000,
    files,
  });
  app = buildServer({ bodyLimitBytes: 1024, logLevel: 'silent', ready: () => true });
  registerOperations(app, fileDownloadHandlers({ signer, store }));
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app?.close();
  await store?.close();
});

/** The signed URL pointed at the test server (the signer's public base is not listening). */
function local(url: string): string {
  const parsed = new URL(url);
  expect(parsed.origin).toBe(PUBLIC_BASE);
  return `${base}${parsed.pathname}${parsed.search}`;
}

function signedUrl(runId: string, fileKey: string): URL {
  return new URL(local(signer.sign(runId, fileKey).url));
}

async function expectForbidden(url: string | URL, message: string): Promise<void> {
  const response = await fetch(url);
  expect(response.status).toBe(403);
  const code =
    message === 'Download link expired' ? 'KG_ERR_DOWNLOAD_LINK_EXPIRED' : 'KG_ERR_DOWNLOAD_LINK_INVALID';
  expect(await response.json()).toEqual(catalogError(code, message));
}

describe('presigned file downloads', () => {
  it('serves the bytes with content type, length and attachment headers, without an API key', async () => {
    const signed = signer.sign(RUN_ID, 'hello.txt');
    expect(signed.expiresIn).toBe(3600);
    expect(signed.url).toMatch(
      /^https:\/\/kubeglue\.example\/v1\/files\/run%3Afiles-1\/hello\.txt\?expires=\d+&signature=[\w-]{43}$/,
    );
    const response = await fetch(local(signed.url));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(response.headers.get('content-length')).toBe('13');
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename="hello.txt"; filename*=UTF-8''hello.txt`,
    );
    // Cache-Control: no-store is the auth hook's, for every answer of /v1 (security/api-no-store.test.ts).
    expect(await response.text()).toBe('hello, files\n');
  });

  it('serves binary content byte for byte', async () => {
    const response = await fetch(signedUrl(RUN_ID, 'blob.bin'));
    expect(response.status).toBe(200);
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(Uint8Array.from([0, 1, 2, 253, 254, 255]));
  });

  it('round-trips a fileKey with special characters', async () => {
    const response = await fetch(signedUrl(RUN_ID, SPECIAL_KEY));
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('a,b\n1,2\n');
    const disposition = response.headers.get('content-disposition') ?? '';
    const encoded = /filename\*=UTF-8''(.+)$/.exec(disposition)?.[1];
    expect(encoded).toBeDefined();
    expect(encoded).not.toMatch(/['()* ]/);
    expect(decodeURIComponent(encoded ?? '')).toBe(SPECIAL_KEY);
  });

  it('still works at the end of the hour and refuses the link once expired', async () => {
    const issuedAt = clock;
    const url = signedUrl(RUN_ID, 'hello.txt');
    try {
      clock = issuedAt + 3600 * 1000;
      expect((await fetch(url)).status).toBe(200);
      clock = issuedAt + 3601 * 1000;
      await expectForbidden(url, 'Download link expired');
    } finally {
      clock = issuedAt;
    }
  });

  it('refuses a tampered signature', async () => {
    const url = signedUrl(RUN_ID, 'hello.txt');
    const signature = url.searchParams.get('signature') ?? '';
    const flipped = `${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`;
    url.searchParams.set('signature', flipped);
    await expectForbidden(url, 'Download link is invalid');
  });

  it('refuses a link whose expiry was pushed back', async () => {
    const url = signedUrl(RUN_ID, 'hello.txt');
    url.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 86_400));
    await expectForbidden(url, 'Download link is invalid');
  });

  it("refuses one file's signature used for another file or another run", async () => {
    const url = signedUrl(RUN_ID, 'hello.txt');
    await expectForbidden(
      `${base}/v1/files/${encodeURIComponent(RUN_ID)}/blob.bin${url.search}`,
      'Download link is invalid',
    );
    await expectForbidden(`${base}/v1/files/run%3Aother/hello.txt${url.search}`, 'Download link is invalid');
  });

  it('refuses a link without or with malformed signature parameters', async () => {
    const path = `${base}/v1/files/${encodeURIComponent(RUN_ID)}/hello.txt`;
    await expectForbidden(path, 'Download link is invalid');
    const url = signedUrl(RUN_ID, 'hello.txt');
    await expectForbidden(
      `${path}?expires=soon&signature=${url.searchParams.get('signature')}`,
      'Download link is invalid',
    );
    await expectForbidden(`${url.href}&signature=again`, 'Download link is invalid');
  });

  it('refuses links signed with another key', async () => {
    const other = new FileUrlSigner({ key: randomBytes(32), baseUrl: PUBLIC_BASE, now: () => clock });
    await expectForbidden(local(other.sign(RUN_ID, 'hello.txt').url), 'Download link is invalid');
  });

  it('answers 404 for a validly signed link to a file that does not exist', async () => {
    const response = await fetch(signedUrl(RUN_ID, 'missing.txt'));
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual(
      catalogError('KG_ERR_FILE_NOT_FOUND', expect.stringMatching(/^File '.*' of run '.*' not found$/)),
    );
  });

  it('builds artifact lists and download info with fresh working URLs', async () => {
    const run = await store.getRun(RUN_ID);
    const artifacts = withDownloadUrls(signer, RUN_ID, run?.fileArtifacts ?? []);
    expect(artifacts.map((a) => a.fileKey).sort()).toEqual(files.map((f) => f.fileKey).sort());
    for (const artifact of artifacts) {
      expect((await fetch(local(artifact.downloadUrl ?? ''))).status).toBe(200);
    }
    const hello = run?.fileArtifacts?.find((a) => a.fileKey === 'hello.txt');
    if (!hello) throw new Error('hello.txt artifact missing');
    const info = fileDownloadInfo(signer, RUN_ID, hello);
    expect(info).toEqual({
      success: true,
      fileKey: 'hello.txt',
      filename: 'hello.txt',
      contentType: 'text/plain; charset=utf-8',
      size: 13,
      downloadUrl: expect.stringMatching(/^https:\/\/kubeglue\.example\/v1\/files\//),
      expiresIn: 3600,
    });
  });
});
