import { mkdtemp, rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { callApi, startServerProcess, TEST_ADMIN_KEY, testServerEnv } from '../../support/embedded.ts';
import { type FtpTestServer, startFtpServer } from '../../support/ftp-server.ts';
import { type HttpTarget, startHttpTarget, type TargetRequest } from '../../support/http-target.ts';
import { freeLoopbackPort } from '../../support/os.ts';
import {
  createPasswordRole,
  createTestDatabase,
  type TestDatabase,
  type TestRole,
} from '../../support/postgres.ts';
import { sambaMissing, startSamba, type TestSamba } from '../../support/samba.ts';
import { type Exposed, findSecrets, type Secret, summarise } from '../../support/secret-scan.ts';
import { generateTestKeyPair, type SftpTestServer, startSftpServer } from '../../support/sftp-server.ts';

/** Every credential value of the sweep, by a name that says where it is used. */
const S = {
  bearerToken: 'swBearer-"quoted"\\back-1a2b',
  botToken: "swBot:9c8d!(paren)'tick'~",
  headerApiKey: 'swHdrKey*star 3e4f',
  queryApiKey: "sw Qry+Key/&=!'()~é-5a6b",
  bearerApiKey: 'swAkBearer-7c8d',
  basicUser: 'sw.user-9e0f',
  basicPassword: 'pa$$ "w0rd"\\!-1b2c',
  customHeader: 'swCustom-3d4e',
  /** Three characters: a credential only as a whole token (docs/security.md "Redaction"). */
  shortHeader: 'Zq7',
  oauthAccessToken: 'swOauthAccess-5f6a',
  oauthClientId: 'swOauthClientId-7b8c',
  oauthClientSecret: 'swOauthClientSecret-9d0e',
  pgPassword: `pg-Sw"eep' P@ss:w0rd/-2c3d`,
  pgWrongPassword: 'pg-Wrong-Pass"word-4e5f',
  // ftp-srv drops `"` from commands, so the FTP passwords have none.
  ftpPassword: "ftp-Sweep Pa\\ss!'-6a7b",
  ftpWrongPassword: 'ftp-Wrong!Pw-8c9d',
  sftpPassword: 'sftp-Sw"eep Pa\\ss!-0e1f',
  sftpPassphrase: 'sftp-Passphrase"!-2a3b',
  sftpWrongPassword: 'sftp-Wrong-Pw-4c5d',
  smbPassword: 'smb-Sw"eep Pa\\ss!-7e8f',
  smbWrongPassword: 'smb-Wrong-Pw-9a0b',
  rtStoredApiKey: 'swRtStored-6c7d',
  rtSyncApiKey: "rtSyncKey'(x)-6e7f",
  rtSyncLoose: 'rtSyncLoose~!-8a9b',
  rtAsyncApiKey: "rtAsyncKey'(y)-0c1d",
  rtAsyncLoose: 'rtAsyncLoose~!-2e3f',
  rtHang: "rtHang 'q'~-4a5b",
  /** Refused runtime credential: it would replace a system's URL. */
  rtRefused: 'rtRefused-9f8e!',
  /** Values of requests the API refuses. */
  refusedUrlPassword: "sysUrlPw'x-7d6c",
  refusedBearer: 'swBadBearer-5b4a',
  refusedBasicUser: 'swBadBasicUser-3c2b',
  refusedRunLoose: 'swBadRunLoose-1d0e',
} as const;

const sftpKey = generateTestKeyPair(S.sftpPassphrase);

let target: HttpTarget;
/** Another origin: where the redirect leads. */
let elsewhere: HttpTarget;
let receiver: HttpTarget;
let ftp: FtpTestServer;
let sftp: SftpTestServer;
/** Without smbd (not under CI, where it must be there) the sweep leaves SMB out. */
let samba: TestSamba | undefined;
let database: TestDatabase;
let role: TestRole;
let server: SweptServer;
const held: ServerResponse[] = [];
/** The `run` query value of each held request: which run reached the target. */
const heldRuns: string[] = [];
/** Everything the deployment exposed, gathered before the assertions. */
const exposed: { api: Exposed[]; notifications: Exposed[]; metrics: Exposed[]; output: Exposed[] } = {
  api: [],
  notifications: [],
  metrics: [],
  output: [],
};
/** Runs of the sweep by label, as they ended. */
const runs = new Map<string, Run>();

// --- the deployment as a process ---

interface SweptServer {
  url: string;
  /** stdout and stderr as printed so far. */
  output(): string;
  stop(): Promise<void>;
}

async function startSweptServer(dataDir: string): Promise<SweptServer> {
  const port = await freeLoopbackPort();
  const { child, output, exited } = await startServerProcess({
    HOME: process.env.HOME,
    ...testServerEnv(dataDir, {
      KUBEGLUE_PORT: String(port),
      KUBEGLUE_WORKERS: '2',
      KUBEGLUE_LOG_LEVEL: 'trace',
      KUBEGLUE_NOTIFY_ALLOW_PRIVATE: 'true',
      KUBEGLUE_NOTIFY_RETRY_DELAYS_MS: '200',
      KUBEGLUE_SHUTDOWN_GRACE_MS: '1000',
    }),
  });
  return {
    url: `http://127.0.0.1:${port}`,
    output,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Calls the API with the admin key; every answer is kept as exposed. */
async function api<T = unknown>(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const answer = await callApi<T>(server.url, TEST_ADMIN_KEY, method, path, body);
  exposed.api.push({ where: `${method} ${path}`, text: answer.text });
  return answer;
}

async function created(path: string, body: unknown): Promise<void> {
  const answer = await api('POST', path, body);
  expect(answer.status, `POST ${path}: ${JSON.stringify(answer.body)}`).toBe(201);
}

/** Polls outside a test (expect.poll works only inside one). */
async function waitFor(
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function finished(runId: string): Promise<Run> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { body } = await api<Run>('GET', `/v1/runs/${encodeURIComponent(runId)}`);
    if (body.status !== 'running') return body;
    if (Date.now() > deadline) throw new Error(`run ${runId} still running after 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// --- the servers the systems point at ---

/** The request as a failing server might echo it back: the nastiest case for error snippets. */
function echo(req: TargetRequest) {
  return { method: req.method, url: req.url, query: req.query, headers: req.headers, body: req.text };
}

/**
 * JSON text as servers in other languages write it by default: Python escapes every character outside
 * printable ASCII, PHP also writes `/` as `\/`.
 */
function jsonAs(dialect: 'python' | 'php', value: unknown) {
  const ascii = JSON.stringify(value).replace(
    /[^\x20-\x7e]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return {
    headers: { 'content-type': 'application/json' },
    body: dialect === 'php' ? ascii.replaceAll('/', '\\/') : ascii,
  };
}

function echoText(req: TargetRequest): string {
  const headers = Object.entries(req.headers).map(([name, value]) => `${name}: ${String(value)}`);
  return `${req.method} ${req.url}\n${headers.join('\n')}\n\n${req.text}`;
}

async function startTargets(): Promise<void> {
  [target, elsewhere, receiver] = await Promise.all([
    startHttpTarget(),
    startHttpTarget(),
    startHttpTarget(),
  ]);
  target.route('*', '/echo-500', (req) => ({ status: 500, body: { error: 'boom', request: echo(req) } }));
  target.route('*', '/echo-500-python', (req) => ({
    status: 500,
    ...jsonAs('python', { error: 'boom', request: echo(req) }),
  }));
  target.route('*', '/echo-500-text', (req) => ({
    status: 500,
    headers: { 'content-type': 'text/plain' },
    body: `internal error while handling\n${echoText(req)}`,
  }));
  target.route('GET', '/deny-401', (req) => {
    const { headers, body } = jsonAs('php', {
      error: `credentials ${String(req.headers.authorization)} refused`,
      request: echo(req),
    });
    return { status: 401, headers: { ...headers, 'www-authenticate': 'Bearer realm="sweep"' }, body };
  });
  target.route('GET', '/ok-echo', (req) => ({ body: { seen: echo(req) } }));
  target.route('GET', '/redirect-away', {
    status: 302,
    headers: { location: `${elsewhere.url}/landing?from=a` },
  });
  target.route('GET', '/drop', (_req, res) => {
    res.destroy();
    return undefined;
  });
  target.route('GET', '/hold', (req, res) => {
    held.push(res);
    heldRuns.push(req.query.find(([name]) => name === 'run')?.[1] ?? '');
    return undefined;
  });
  elsewhere.route('*', '/landing', (req) => ({ status: 500, body: { landed: echo(req) } }));
  receiver.route('POST', '/notify', { status: 204 });
}

async function startDataServers(): Promise<void> {
  database = await createTestDatabase(inject('databaseUrl'));
  role = await createPasswordRole(database, S.pgPassword);
  ftp = await startFtpServer({
    password: S.ftpPassword,
    // A server that repeats the password it was given: the FTP reply is the step's error.
    loginFailureMessage: (given) => `Login incorrect: '${given}' is not the password`,
  });
  sftp = await startSftpServer({ password: S.sftpPassword, publicKey: sftpKey.publicKey });
  if (!sambaMissing()) samba = await startSamba({ password: S.smbPassword });
}

// --- systems, tools and runs ---

/** The test database's URL without userinfo. */
function pgUrl(): string {
  const url = new URL(database.url);
  url.username = '';
  return url.toString();
}

/**
 * Systems whose credentials tool code may not read (the default; issue 19): the copying transform is
 * refused them. Every other system allows it (codeAccess), so code copies its credentials and the sweep
 * shows that what code read is still redacted everywhere.
 */
const CLOSED_TO_CODE = new Set(['sw-bearer', 'sw-hdrkey', 'sw-custom', 'sw-pg-wrong', 'sw-ftp-wrong']);

function systems() {
  const http = (id: string, authType: string, credentials: Record<string, string>) => ({
    id,
    url: target.url,
    authType,
    credentials,
  });
  return withCodeAccess([
    http('sw-bearer', 'bearer', { bearerToken: S.bearerToken }),
    http('sw-bot', 'botToken', { botToken: S.botToken }),
    http('sw-hdrkey', 'apiKey', { apiKey: S.headerApiKey, apiKeyHeader: 'X-Sweep-Key' }),
    // `q` is no conventional credential name, so nothing masks it in URLs: only redaction does.
    http('sw-qrykey', 'apiKey', { apiKey: S.queryApiKey, apiKeyQueryParam: 'q' }),
    http('sw-akbearer', 'apiKey', { apiKey: S.bearerApiKey }),
    http('sw-basic', 'basic', { username: S.basicUser, password: S.basicPassword }),
    http('sw-custom', 'customHeaders', { 'X-Sweep-Custom': S.customHeader, 'X-Sweep-Short': S.shortHeader }),
    http('sw-oauth', 'oauth', {
      accessToken: S.oauthAccessToken,
      clientId: S.oauthClientId,
      clientSecret: S.oauthClientSecret,
      authorizationUrl: 'https://auth.sweep.invalid/authorize',
      tokenUrl: 'https://auth.sweep.invalid/token',
    }),
    http('sw-rt', 'apiKey', { apiKey: S.rtStoredApiKey, apiKeyHeader: 'X-Rt-Key' }),
    {
      id: 'sw-pg',
      authType: 'dataStore',
      credentials: { url: role.url },
    },
    {
      id: 'sw-pg-wrong',
      authType: 'dataStore',
      credentials: { url: pgUrl(), username: role.name, password: S.pgWrongPassword },
    },
    {
      id: 'sw-ftp',
      url: ftp.url,
      authType: 'dataStore',
      credentials: { username: ftp.username, password: S.ftpPassword },
    },
    {
      id: 'sw-ftp-wrong',
      url: ftp.url,
      authType: 'dataStore',
      credentials: { username: ftp.username, password: S.ftpWrongPassword },
    },
    {
      id: 'sw-sftp',
      url: sftp.url,
      authType: 'dataStore',
      credentials: { username: sftp.username, password: S.sftpPassword },
    },
    {
      id: 'sw-sftp-key',
      url: sftp.url,
      authType: 'dataStore',
      credentials: { username: sftp.username, privateKey: sftpKey.privateKey, passphrase: S.sftpPassphrase },
    },
    {
      id: 'sw-sftp-wrong',
      url: sftp.url,
      authType: 'dataStore',
      credentials: { username: sftp.username, password: S.sftpWrongPassword },
    },
    ...(samba
      ? [
          {
            id: 'sw-smb',
            url: `${samba.url}/files`,
            authType: 'dataStore',
            credentials: { username: samba.username, password: S.smbPassword, domain: samba.workgroup },
          },
          {
            id: 'sw-smb-wrong',
            url: `${samba.url}/files`,
            authType: 'dataStore',
            credentials: { username: samba.username, password: S.smbWrongPassword },
          },
        ]
      : []),
  ]);
}

function withCodeAccess<T extends { id: string }>(list: T[]): Array<T & { codeAccess: boolean }> {
  return list.map((system) => ({ ...system, codeAccess: !CLOSED_TO_CODE.has(system.id) }));
}

type Config = Record<string, unknown>;

/** A step that may fail without ending the run, so one run collects every failure. */
function step(id: string, systemId: string | undefined, config: Config) {
  return { id, failureBehavior: 'continue', config: { ...config, ...(systemId ? { systemId } : {}) } };
}

/**
 * A transform copies every credential code may read (systems with codeAccess, the caller's runtime
 * credentials), also as JSON text; for the others it keeps the refusal it got.
 */
const copyCredentials = {
  id: 'creds',
  config: {
    type: 'transform',
    transformCode: `(s) => {
      const all = {};
      for (const name of Object.keys(s.credentials)) {
        try { all[name] = JSON.parse(JSON.stringify(s.credentials[name])); } catch (e) { all[name] = 'refused: ' + e.message; }
      }
      return { all, json: JSON.stringify(all) };
    }`,
  },
};

/** Text files about the run's data: the failures and the whole (redacted) sourceData. */
const writeFiles = `(s) => {
  const failed = Object.entries(s).filter(([, v]) => v && v.success === false).map(([k, v]) => k + ': ' + v.error);
  const names = Object.values((s.creds && s.creds.data && s.creds.data.all) || {}).flatMap((v) => typeof v === 'object' ? Object.values(v) : [v]);
  return {
    failed: failed.length,
    __files__: {
      'errors.txt': failed.join('\\n'),
      'sourcedata.json': JSON.stringify(s, null, 2),
      ['named-' + String(names[0]).slice(0, 60) + '.txt']: names.join(' | '),
    },
  };
}`;

function tools() {
  const post = (path: string, extra: Config = {}) => ({ url: path, method: 'POST', ...extra });
  const get = (path: string, extra: Config = {}) => ({ url: path, ...extra });
  const files = (url: string, body: unknown) => ({ url, method: 'POST', body });
  return [
    {
      id: 'sweep-http',
      steps: [
        step('bearer500', 'sw-bearer', post('/echo-500', { body: { token: '<<sw-bearer_bearerToken>>' } })),
        step('bot500', 'sw-bot', post('/echo-500-python', { headers: { 'X-Copy': '<<sw-bot_botToken>>' } })),
        // In the URL text itself: encoded by the template, then `'` by the URL parser.
        step('botInlineQuery', 'sw-bot', get('/echo-500-python?inline=<<sw-bot_botToken>>')),
        step('hdrkey500', 'sw-hdrkey', post('/echo-500-text', { body: 'key=<<sw-hdrkey_apiKey>>' })),
        step(
          'qrykey500',
          'sw-qrykey',
          get('/echo-500-python', { queryParams: { copy: '<<sw-qrykey_apiKey>>' } }),
        ),
        step('qrykeyText', 'sw-qrykey', get('/echo-500-text')),
        step('qrykeyDrop', 'sw-qrykey', get('/drop')),
        step('qrykey401', 'sw-qrykey', get('/deny-401')),
        step('akbearer401', 'sw-akbearer', get('/deny-401')),
        step(
          'basic500',
          'sw-basic',
          post('/echo-500-python', {
            body: { user: '<<sw-basic_username>>', pass: '<<sw-basic_password>>' },
          }),
        ),
        step('basic401', 'sw-basic', get('/deny-401')),
        step('custom500', 'sw-custom', get('/echo-500-text')),
        step(
          'oauth500',
          'sw-oauth',
          post('/echo-500-text', {
            body: { id: '<<sw-oauth_clientId>>', secret: '<<sw-oauth_clientSecret>>' },
          }),
        ),
        step('redirectHeaderKey', 'sw-hdrkey', get('/redirect-away')),
        step('redirectCustom', 'sw-custom', get('/redirect-away')),
        step('redirectQueryKey', 'sw-qrykey', get('/redirect-away')),
        step('okEcho', 'sw-bearer', get('/ok-echo')),
        copyCredentials,
      ],
      outputTransform: writeFiles,
    },
    {
      id: 'sweep-pg',
      steps: [
        step(
          'pgOk',
          'sw-pg',
          files('<<sw-pg_url>>', {
            query: 'SELECT current_user AS who, $1::text AS url',
            params: ['<<sw-pg_url>>'],
          }),
        ),
        step(
          'pgSqlError',
          'sw-pg',
          files('<<sw-pg_url>>', { query: 'SELECT $1::int', params: ['<<sw-pg_url>>'] }),
        ),
        step('pgMissingTable', 'sw-pg', files('<<sw-pg_url>>', 'SELECT * FROM sweep_missing_table')),
        // No systemId: every system of this origin may fill templates (both Postgres systems share it).
        step(
          'pgParamError',
          undefined,
          files('<<sw-pg_url>>', { query: 'SELECT $1::int', params: ['<<sw-pg-wrong_password>>'] }),
        ),
        step('pgWrongPassword', 'sw-pg-wrong', files('<<sw-pg-wrong_url>>', 'SELECT 1')),
        copyCredentials,
      ],
      outputTransform: writeFiles,
    },
    {
      id: 'sweep-files',
      steps: [
        {
          ...step(
            'ftpRoundTrip',
            'sw-ftp',
            files('/', [
              { operation: 'put', path: '/echo.txt', content: 'password=<<sw-ftp_password>>' },
              { operation: 'get', path: '/echo.txt' },
              { operation: 'list', path: '/' },
            ]),
          ),
          modify: true,
        },
        step(
          'ftpMissing',
          'sw-ftp',
          files('/', { operation: 'get', path: '/missing-<<sw-ftp_password>>.txt' }),
        ),
        step('ftpWrongPassword', 'sw-ftp-wrong', files('/', { operation: 'list', path: '/' })),
        {
          ...step(
            'sftpRoundTrip',
            'sw-sftp',
            files('/', [
              { operation: 'put', path: '/echo.txt', content: 'password=<<sw-sftp_password>>' },
              { operation: 'get', path: '/echo.txt' },
            ]),
          ),
          modify: true,
        },
        step(
          'sftpMissing',
          'sw-sftp',
          files('/', { operation: 'get', path: '/nope/<<sw-sftp_password>>.txt' }),
        ),
        step(
          'sftpKeyMissing',
          'sw-sftp-key',
          files('/', { operation: 'list', path: '/missing-<<sw-sftp-key_passphrase>>' }),
        ),
        step('sftpWrongPassword', 'sw-sftp-wrong', files('/', { operation: 'list', path: '/' })),
        ...(samba
          ? [
              {
                ...step(
                  'smbRoundTrip',
                  'sw-smb',
                  files('/', [
                    { operation: 'put', path: '/echo.txt', content: 'password=<<sw-smb_password>>' },
                    { operation: 'get', path: '/echo.txt' },
                  ]),
                ),
                modify: true,
              },
              step(
                'smbMissing',
                'sw-smb',
                files('/', { operation: 'get', path: '/nope/<<sw-smb_password>>.txt' }),
              ),
              step('smbWrongPassword', 'sw-smb-wrong', files('/', { operation: 'list', path: '/' })),
            ]
          : []),
        copyCredentials,
      ],
      outputTransform: writeFiles,
    },
    {
      id: 'sweep-runtime',
      steps: [
        step('rtSystem', 'sw-rt', post('/echo-500', { body: { key: '<<sw-rt_apiKey>>' } })),
        step(
          'looseEcho',
          undefined,
          post(`${target.url}/echo-500-text`, {
            headers: { 'X-Loose': '<<rtLoose>>' },
            body: 'loose=<<rtLoose>>',
          }),
        ),
        copyCredentials,
      ],
      outputTransform: writeFiles,
    },
    {
      id: 'sweep-hang',
      steps: [
        step('hang', 'sw-qrykey', get('/hold', { queryParams: { x: '<<rtHang>>', run: '<<label>>' } })),
      ],
    },
    {
      // The last step's failure is the run's error: in run lists and notifications too. Neither error is
      // scrubbed by a protocol (a transform's own error; a URL whose parameter name looks harmless).
      id: 'sweep-fail-hard',
      steps: [
        {
          id: 'thrower',
          failureBehavior: 'continue',
          config: {
            type: 'transform',
            transformCode: `(s) => { throw new Error('cannot use ' + s.credentials['sw-qrykey'].apiKey); }`,
          },
        },
        { id: 'hard', config: { url: '/echo-500-python', method: 'POST', systemId: 'sw-qrykey', body: 'x' } },
      ],
    },
    {
      id: 'sweep-chain-parent',
      steps: [step('echoed', 'sw-bearer', get('/ok-echo'))],
    },
    {
      id: 'sweep-chain-child',
      steps: [step('childFails', 'sw-basic', post('/echo-500', { body: { from: '<<seen>>' } }))],
    },
  ];
}

const notifyOptions = () => ({ webhookUrl: `${receiver.url}/notify` });

async function runSync(label: string, toolId: string, request: Config): Promise<void> {
  const answer = await api<Run>('POST', `/v1/tools/${toolId}/run`, request);
  expect(answer.status, `${label}: ${JSON.stringify(answer.body)}`).toBe(200);
  runs.set(label, answer.body);
}

async function runAsync(label: string, toolId: string, request: Config): Promise<string> {
  const options = { ...(request.options as Config | undefined), async: true };
  const answer = await api<Run>('POST', `/v1/tools/${toolId}/run`, { ...request, options });
  expect(answer.status, `${label}: ${JSON.stringify(answer.body)}`).toBe(202);
  return answer.body.runId;
}

async function runEverything(): Promise<void> {
  const asyncRuns = new Map<string, string>();
  const launch = async (label: string, toolId: string, request: Config) =>
    asyncRuns.set(label, await runAsync(label, toolId, request));

  await Promise.all([
    runSync('http sync', 'sweep-http', { options: notifyOptions() }),
    launch('http async', 'sweep-http', { options: notifyOptions() }),
    runSync('pg sync', 'sweep-pg', { options: notifyOptions() }),
    launch('pg async', 'sweep-pg', {}),
    runSync('files sync', 'sweep-files', { options: notifyOptions() }),
    launch('files async', 'sweep-files', {}),
    runSync('runtime sync', 'sweep-runtime', {
      credentials: { 'sw-rt_apiKey': S.rtSyncApiKey, rtLoose: S.rtSyncLoose },
      options: notifyOptions(),
    }),
    launch('runtime async', 'sweep-runtime', {
      credentials: { 'sw-rt': { apiKey: S.rtAsyncApiKey }, rtLoose: S.rtAsyncLoose },
      options: notifyOptions(),
    }),
    launch('timed out', 'sweep-hang', {
      inputs: { label: 'timed-out' },
      credentials: { rtHang: S.rtHang },
      options: { ...notifyOptions(), timeout: 1500 },
    }),
    runSync('chain parent', 'sweep-chain-parent', { options: { webhookUrl: 'tool:sweep-chain-child' } }),
    runSync('failed sync', 'sweep-fail-hard', { options: notifyOptions() }),
    launch('failed async', 'sweep-fail-hard', { options: notifyOptions() }),
    runSync('refused credentials', 'sweep-runtime', {
      credentials: { 'sw-rt_url': S.rtRefused, rtLoose: S.rtSyncLoose },
      options: notifyOptions(),
    }),
  ]);

  const cancelled = await runAsync('cancelled', 'sweep-hang', {
    inputs: { label: 'cancelled' },
    credentials: { rtHang: S.rtHang },
    options: notifyOptions(),
  });
  // Cancelled while its request is in flight, not while it waits to start.
  await waitFor('the cancelled run reaches the target', () => heldRuns.includes('cancelled'));
  expect((await api('POST', `/v1/runs/${cancelled}/cancel`)).status).toBe(200);
  asyncRuns.set('cancelled', cancelled);

  for (const [label, runId] of asyncRuns) runs.set(label, await finished(runId));
  let child: Run | undefined;
  await waitFor('the chained run', async () => {
    const list = await api<{ data: Run[] }>('GET', '/v1/runs?requestSources=tool-chain&limit=10');
    child = list.body.data[0];
    return child !== undefined;
  });
  if (child) runs.set('chained child', await finished(child.runId));
  // Every notification (11 runs notify a URL) before the process output is taken.
  await waitFor(
    'every notification',
    () => new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size >= 11,
  );
}

/** Requests the API refuses while they carry credentials: the answers must not repeat them. */
async function sendRefused(): Promise<number[]> {
  const answers = [
    await api('POST', '/v1/systems', {
      id: 'sw-refused-url',
      url: `http://sweep:${encodeURIComponent(S.refusedUrlPassword)}@127.0.0.1/`,
      authType: 'bearer',
      credentials: { bearerToken: S.refusedBearer },
    }),
    await api('POST', '/v1/systems', {
      id: 'sw-refused-shape',
      authType: 'basic',
      credentials: { username: S.refusedBasicUser },
    }),
    await api('POST', '/v1/tools/sweep-runtime/run', {
      credentials: { rtLoose: S.refusedRunLoose },
      options: { timeout: 'soon' },
    }),
  ];
  return answers.map((answer) => answer.status);
}

/** Reads every run through every run endpoint, the files through their presigned URLs, and the rest. */
async function readEverything(): Promise<void> {
  const listed: Run[] = [];
  for (let page = 1; ; page++) {
    const { body } = await api<{ data: Run[]; hasMore: boolean }>('GET', `/v1/runs?limit=100&page=${page}`);
    listed.push(...body.data);
    if (!body.hasMore) break;
  }
  for (const { runId } of listed) {
    const id = encodeURIComponent(runId);
    const { body: run } = await api<Run>('GET', `/v1/runs/${id}`);
    await api('GET', `/v1/runs/${id}/results`);
    await api('GET', `/v1/runs/${id}/results?truncate=true`);
    await api('GET', `/v1/runs/${id}/files`);
    for (const file of run.fileArtifacts ?? []) {
      const key = encodeURIComponent(file.fileKey);
      const { body: info } = await api<{ downloadUrl: string }>(
        'GET',
        `/v1/runs/${id}/files/${key}/download`,
      );
      // The presigned link needs no API key: fetched as a browser would.
      const content = await fetch(info.downloadUrl);
      exposed.api.push({ where: `download of ${run.runId}/${file.fileKey}`, text: await content.text() });
    }
  }
  const { body: systemList } = await api<{ data: Array<{ id: string }> }>('GET', '/v1/systems?limit=100');
  for (const { id } of systemList.data) await api('GET', `/v1/systems/${id}`);
  const { body: toolList } = await api<{ data: Array<{ id: string }> }>('GET', '/v1/tools?limit=100');
  for (const { id } of toolList.data) await api('GET', `/v1/tools/${id}`);
  const metrics = await fetch(`${server.url}/metrics`);
  exposed.metrics.push({ where: 'GET /metrics', text: await metrics.text() });
  for (const [index, request] of receiver.requests.entries()) {
    exposed.notifications.push({ where: `notification ${index + 1} body`, text: request.text });
    exposed.notifications.push({
      where: `notification ${index + 1} headers`,
      text: JSON.stringify(request.headers),
    });
  }
}

/** Each credential value, and the forms derived from them that carry them as well. */
function secrets(): Secret[] {
  const values: Secret[] = Object.entries(S).map(([name, value]) => ({ name, value }));
  const basic = Buffer.from(`${S.basicUser}:${S.basicPassword}`).toString('base64');
  const keyLines = sftpKey.privateKey.split('\n').filter((line) => /^[A-Za-z0-9+/=]{40,}$/.test(line));
  return [
    ...values,
    { name: 'basic auth header value', value: basic },
    { name: 'Postgres connection URL', value: role.url },
    { name: 'SFTP private key', value: sftpKey.privateKey },
    // A line of the key body: part of a key is as bad as all of it.
    ...keyLines.slice(1, 2).map((value) => ({ name: 'SFTP private key line', value })),
  ];
}

let dataDir: string;
let refusedStatuses: number[] = [];

beforeAll(async () => {
  await startTargets();
  await startDataServers();
  dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-sweep-'));
  server = await startSweptServer(dataDir);
  for (const system of systems()) await created('/v1/systems', system);
  for (const tool of tools()) await created('/v1/tools', tool);
  refusedStatuses = await sendRefused();
  await runEverything();
  await readEverything();
  await server.stop();
  exposed.output.push({ where: 'process output', text: server.output() });
}, 120_000);

afterAll(async () => {
  for (const res of held) res.destroy();
  await server?.stop().catch(() => {});
  await Promise.all([
    target?.stop(),
    elsewhere?.stop(),
    receiver?.stop(),
    ftp?.stop(),
    sftp?.stop(),
    samba?.stop(),
  ]);
  await database?.drop();
  await role?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

function stepError(label: string, stepId: string): string {
  const run = runs.get(label);
  return run?.stepResults?.find((s) => s.stepId === stepId)?.error ?? `(no error for ${label} ${stepId})`;
}

describe('the sweep exercised what it claims', () => {
  it('sent every credential to its own server, and none to the other origin', () => {
    const sent = (requests: TargetRequest[]) => requests.map((r) => JSON.stringify(echo(r))).join('\n');
    const atTarget = findSecrets(secrets(), [{ where: 'requests received', text: sent(target.requests) }]);
    const httpSecrets = [
      'bearerToken',
      'botToken',
      'headerApiKey',
      'queryApiKey',
      'bearerApiKey',
      'basic auth header value',
      'customHeader',
      'shortHeader',
      'oauthAccessToken',
      'rtSyncApiKey',
      'rtSyncLoose',
      'rtAsyncApiKey',
      'rtAsyncLoose',
      'rtHang',
    ];
    expect(httpSecrets.filter((name) => !atTarget.some((f) => f.secret === name))).toEqual([]);
    expect(elsewhere.count('/landing')).toBeGreaterThanOrEqual(3);
    const leaked = findSecrets(secrets(), [
      { where: 'requests at the other origin', text: sent(elsewhere.requests) },
    ]);
    expect(summarise(leaked)).toEqual([]);
  });

  it('failed in every protocol the way it meant to', () => {
    expect(runs.get('http sync')?.stepResults?.filter((s) => !s.success).length).toBe(16);
    expect(stepError('http sync', 'qrykey500')).toMatch(/^HTTP 500 GET /);
    expect(stepError('http sync', 'basic401')).toMatch(/^HTTP 401 GET /);
    expect(stepError('http sync', 'qrykeyDrop')).toMatch(/failed/);
    expect(stepError('http sync', 'redirectCustom')).toMatch(/HTTP 500 GET .*landed/);
    expect(stepError('pg sync', 'pgSqlError')).toMatch(/Postgres error 22P02/);
    expect(stepError('pg sync', 'pgMissingTable')).toMatch(/Postgres error 42P01/);
    expect(stepError('pg sync', 'pgParamError')).toMatch(/Postgres error 22P02/);
    expect(stepError('pg sync', 'pgWrongPassword')).toMatch(/password authentication failed/);
    expect(stepError('files sync', 'ftpMissing')).toMatch(/FTP get .* failed/);
    expect(stepError('files sync', 'ftpWrongPassword')).toMatch(/530 Login incorrect/);
    expect(stepError('files sync', 'sftpMissing')).toMatch(/SFTP get .* failed/);
    expect(stepError('files sync', 'sftpKeyMissing')).toMatch(/SFTP list .* failed/);
    expect(stepError('files sync', 'sftpWrongPassword')).toMatch(/authentication/i);
    if (samba) {
      expect(stepError('files sync', 'smbMissing')).toMatch(/SMB get .* failed/);
      expect(stepError('files sync', 'smbWrongPassword')).toMatch(/STATUS_LOGON_FAILURE/);
    }
    for (const label of ['pg sync', 'files sync']) {
      const ok = runs
        .get(label)
        ?.stepResults?.filter((s) => s.success)
        .map((s) => s.stepId);
      expect(ok).toEqual(
        label === 'pg sync'
          ? ['pgOk', 'creds']
          : ['ftpRoundTrip', 'sftpRoundTrip', ...(samba ? ['smbRoundTrip'] : []), 'creds'],
      );
    }
    expect(runs.get('timed out')).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/timed out/),
    });
    expect(runs.get('cancelled')?.status).toBe('aborted');
    for (const label of ['failed sync', 'failed async'])
      expect(runs.get(label)?.error, label).toMatch(/^Step hard failed: HTTP 500 POST /);
    expect(stepError('failed sync', 'thrower')).toMatch(/cannot use/);
    expect(runs.get('refused credentials')?.error).toMatch(/'sw-rt_url' would replace the URL/);
    expect(refusedStatuses).toEqual([400, 400, 400]);
    expect(runs.get('chained child')).toMatchObject({ requestSource: 'tool-chain', status: 'success' });
    for (const label of ['http async', 'pg async', 'files async', 'runtime sync', 'runtime async'])
      expect(runs.get(label)?.status, label).toBe('success');
    expect(exposed.api.filter((e) => e.where.startsWith('download of')).length).toBeGreaterThanOrEqual(9);
    // Code was refused the credentials of systems without codeAccess, and copied the others.
    const answers = exposed.api.map((e) => e.text).join('\n');
    expect(answers).toContain('refused: credential sw-bearer_bearerToken is not available to code');
    expect(answers).toContain('<<sw-qrykey_apiKey>>');
  });
});

describe('no credential value appears anywhere the deployment exposes it', () => {
  it.each([
    ['API answers, file contents', () => exposed.api],
    ['notifications', () => exposed.notifications],
    ['/metrics', () => exposed.metrics],
    ['the process output (log lines)', () => exposed.output],
  ])('%s', (_surface, blobs) => {
    expect(blobs().length).toBeGreaterThan(0);
    expect(summarise(findSecrets(secrets(), blobs()))).toEqual([]);
  });
});
