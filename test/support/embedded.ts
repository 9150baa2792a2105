import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EmbeddedApp, startEmbedded } from '../../bin/embedded.ts';
import { loadSettings } from '../../config/config.ts';

export const TEST_ADMIN_KEY = 'kg_test-admin-key-0123456789abcdefghijklmnop';
/** 32 bytes as hex: the master key of test servers, so tests can derive signing keys. */
export const TEST_MASTER_KEY = '6b75626567c0e9e0d1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708';

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface TestApi {
  embedded: EmbeddedApp;
  url: string;
  dataDir: string;
  /** Every response body this client received, for scanning for secrets. */
  bodies: string[];
  call<T = unknown>(
    method: string,
    path: string,
    opts?: { body?: unknown; rawBody?: string; key?: string | null; headers?: Record<string, string> },
  ): Promise<ApiResponse<T>>;
  stop(): Promise<void>;
}

/** Starts the embedded deployment on a free port with a fresh data dir and a known admin key. */
export async function startTestApi(env: Record<string, string> = {}): Promise<TestApi> {
  const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-api-'));
  const config = loadSettings('embedded', {
    KUBEGLUE_PORT: '0',
    KUBEGLUE_DATA_DIR: dataDir,
    KUBEGLUE_ADMIN_KEY: TEST_ADMIN_KEY,
    KUBEGLUE_MASTER_KEY: TEST_MASTER_KEY,
    KUBEGLUE_NOTIFY_ALLOW_PRIVATE: 'true',
    KUBEGLUE_WORKERS: '2',
    KUBEGLUE_LOG_LEVEL: 'silent',
    KUBEGLUE_SHUTDOWN_GRACE_MS: '2000',
    ...env,
  });
  const embedded = await startEmbedded(config, () => {});
  const bodies: string[] = [];
  const call: TestApi['call'] = async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    const key = opts.key === undefined ? TEST_ADMIN_KEY : opts.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let body: string | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(`${embedded.url}${path}`, {
      method,
      headers,
      ...(body !== undefined ? { body } : {}),
    });
    const text = await response.text();
    bodies.push(text);
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // plain text answers (webhook challenges)
    }
    return { status: response.status, headers: response.headers, body: parsed as never, text };
  };
  return {
    embedded,
    url: embedded.url,
    dataDir,
    bodies,
    call,
    stop: async () => {
      await embedded.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Polls GET /v1/runs/:id until the run is no longer running. */
export async function waitForRun<T extends { status: string }>(
  api: TestApi,
  runId: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { body } = await api.call<T>('GET', `/v1/runs/${encodeURIComponent(runId)}`);
    if (body.status !== 'running') return body;
    if (Date.now() > deadline) throw new Error(`run ${runId} still running after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
