import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EmbeddedApp, startEmbedded } from '../../bin/embedded.ts';
import { loadSettings } from '../../config/config.ts';
import type { DocumentationState } from '../../contract/api/system.ts';
import type { ScheduleClock } from '../../schedules/clock.ts';
import { KUBEGLUE_BIN } from './cli.ts';
import { useStarted } from './fixture.ts';

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

/**
 * One call of the /v1 API at baseUrl as the key's holder, with a JSON body when one is given. The answer's
 * body is parsed as JSON when it is JSON, else left as text (undefined when empty).
 */
export async function callApi<T = unknown>(
  baseUrl: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T; text: string }> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: response.status, body: parsed as T, text };
}

/**
 * The whole environment of an embedded server process a test starts (bin/start, the compiled entry
 * point): the test's PATH and nothing else of its own, any free port, the data directory, the test admin
 * key and one engine worker; `extra` on top.
 */
export function serverProcessEnv(
  dataDir: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    KUBEGLUE_PORT: '0',
    KUBEGLUE_DATA_DIR: dataDir,
    KUBEGLUE_ADMIN_KEY: TEST_ADMIN_KEY,
    KUBEGLUE_WORKERS: '1',
    ...extra,
  };
}

/**
 * The URL a kubeglue server process prints once it is ready, and everything it has printed (read at each
 * call); rejects with what it printed if it exits first.
 */
export function readyUrl(child: ChildProcess): Promise<{ url: string; output: () => string }> {
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const ready = /ready on (http:\/\/\S+) /.exec(output);
      if (ready) resolve({ url: ready[1]!, output: () => output });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`kubeglue embedded exited (${code}):\n${output}`)));
  });
}

export interface ServerProcess {
  child: ChildProcess;
  /** What the server printed as the address it is ready on. */
  url: string;
  /** Everything it has printed so far. */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `kubeglue embedded` in a process of its own, with PATH and the environment given, once it is ready. */
export async function startServerProcess(env: Record<string, string | undefined>): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--no-node-snapshot', KUBEGLUE_BIN, 'embedded'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<ServerProcess['exited'] extends Promise<infer E> ? E : never>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const { url, output } = await readyUrl(child);
  return { child, url, output, exited };
}

/** The settings of an embedded test server on dataDir: a free port, the known keys, one worker, no log. */
export function testServerEnv(dataDir: string, env: Record<string, string> = {}): Record<string, string> {
  return {
    KUBEGLUE_PORT: '0',
    KUBEGLUE_DATA_DIR: dataDir,
    KUBEGLUE_ADMIN_KEY: TEST_ADMIN_KEY,
    KUBEGLUE_MASTER_KEY: TEST_MASTER_KEY,
    KUBEGLUE_WORKERS: '1',
    KUBEGLUE_LOG_LEVEL: 'silent',
    ...env,
  };
}

/**
 * Starts the embedded deployment on a free port with a fresh data dir (or `opts.dataDir`, to start again on
 * what an earlier one left) and a known admin key; `opts.scheduleClock`: the schedules' clock; `opts.log`: where
 * its log lines go (with their fields as JSON), instead of nowhere.
 */
export async function startTestApi(
  env: Record<string, string> = {},
  opts: {
    dataDir?: string;
    scheduleClock?: ScheduleClock;
    log?: (line: string, fields?: object) => void;
  } = {},
): Promise<TestApi> {
  const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'kubeglue-api-')));
  const config = loadSettings(
    'embedded',
    testServerEnv(dataDir, {
      KUBEGLUE_NOTIFY_ALLOW_PRIVATE: 'true',
      KUBEGLUE_WORKERS: '2',
      KUBEGLUE_SHUTDOWN_GRACE_MS: '2000',
      ...env,
    }),
  );
  const embedded = await startEmbedded(
    config,
    opts.log ?? (process.env.DEBUG_EMBEDDED ? (line) => console.log(line) : () => {}),
    opts.scheduleClock ? { scheduleClock: opts.scheduleClock } : {},
  );
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

/** A test API (see startTestApi) for the tests of the enclosing block, stopped after them. */
export function useTestApi(env: Record<string, string> | (() => Record<string, string>) = {}): TestApi {
  return useStarted(
    () => startTestApi(typeof env === 'function' ? env() : env),
    (api) => api.stop(),
  );
}

/** A call that must succeed (status below 300): its body; otherwise it throws with the answer. */
export async function callOk<T>(
  api: TestApi,
  method: string,
  path: string,
  body?: unknown,
  key: string = TEST_ADMIN_KEY,
): Promise<T> {
  const answer = await api.call<T>(method, path, { ...(body !== undefined ? { body } : {}), key });
  if (answer.status >= 300)
    throw new Error(`${method} ${path}: ${answer.status} ${answer.text.slice(0, 500)}`);
  return answer.body;
}

/** Reads every 50 ms until `done` holds of what it read; past `timeoutMs`, fails with `stillMessage`. */
async function readUntil<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
  stillMessage: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(stillMessage);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Polls GET /v1/runs/:id until the run is no longer running. */
export function waitForRun<T extends { status: string }>(
  api: TestApi,
  runId: string,
  timeoutMs = 20_000,
): Promise<T> {
  return readUntil(
    async () => (await api.call<T>('GET', `/v1/runs/${encodeURIComponent(runId)}`)).body,
    (run) => run.status !== 'running',
    timeoutMs,
    `run ${runId} still running after ${timeoutMs} ms`,
  );
}

/** A request of the admin key to a server process: its JSON answer; an error status throws, with the body. */
export async function callServer<T>(
  server: Pick<ServerProcess, 'url'>,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  if (response.status >= 400) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

/** Polls GET /v1/runs/:id of a server process until the run is no longer running. */
export function waitForServerRun<T extends { status: string }>(
  server: Pick<ServerProcess, 'url'>,
  runId: string,
  timeoutMs = 60_000,
): Promise<T> {
  return readUntil(
    () => callServer<T>(server, 'GET', `/v1/runs/${encodeURIComponent(runId)}`),
    (run) => run.status !== 'running',
    timeoutMs,
    `run ${runId} still running after ${timeoutMs} ms`,
  );
}

/** Polls GET /v1/systems/:id until the system's documentation is no longer pending: its state then. */
export async function waitForDocumentation(
  api: TestApi,
  systemId: string,
  timeoutMs = 30_000,
): Promise<DocumentationState> {
  const read = async () =>
    (await api.call<{ data: { documentation?: DocumentationState } }>('GET', `/v1/systems/${systemId}`)).body
      .data.documentation;
  const state = await readUntil(
    read,
    (documentation) => documentation !== undefined && documentation.status !== 'pending',
    timeoutMs,
    `documentation of ${systemId} still pending`,
  );
  return state as DocumentationState;
}
