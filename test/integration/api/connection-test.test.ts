/**
 * `POST /v1/systems/{id}/test`: one harmless read per protocol through the run path, against real servers
 * (an HTTP target, the GraphQL server, Postgres, MariaDB, redis-server, SFTP, FTP, smbd). Each protocol
 * answers success with the right credentials and a clear failure with wrong ones, never holding a password
 * (a private Redis through a real gateway agent, an OAuth API with the token kubeglue manages, too);
 * HTTP counts any answer below 500 but 401 and 403 as reachable; the egress guard refuses the metadata
 * address; MSSQL, MongoDB and a system without a URL are refused; the test needs systems:read and
 * runs:execute; it is not recorded as a run, and the server's log keeps one line per test.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { ConnectionTestResult } from '../../../contract/api/system.ts';
import {
  type ServerProcess,
  startServerProcess,
  TEST_ADMIN_KEY,
  type TestApi,
  testServerEnv,
  useTestApi,
} from '../../support/embedded.ts';
import { useFtpServer } from '../../support/ftp-server.ts';
import { startAgent } from '../../support/gateway-agent.ts';
import { GRAPHQL_TOKEN, type GraphqlServer, startGraphqlServer } from '../../support/graphql-server.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { logLines } from '../../support/log-lines.ts';
import { mariadbSkip, useMariaDb } from '../../support/mariadb.ts';
import { useOAuthProvider } from '../../support/oauth-provider.ts';
import {
  createPasswordRole,
  createTestDatabase,
  type TestDatabase,
  type TestRole,
} from '../../support/postgres.ts';
import {
  REDIS_PASSWORD,
  REDIS_USERS,
  redisServerMissing,
  useRedisServer,
} from '../../support/redis-server.ts';
import { sambaMissing, useSamba } from '../../support/samba.ts';
import { type Exposed, findSecrets, type Secret, summarise } from '../../support/secret-scan.ts';
import { useSftpServer } from '../../support/sftp-server.ts';

const WRONG_PASSWORD = 'wrong-PASSWORD-9c1e7a';
const HTTP_TOKEN = 'connection-test-token-4b8d2f';

const api = useTestApi();
/** Every secret the tests store, and every answer they read: none may hold one. */
const secrets: Secret[] = [
  { name: 'wrong password', value: WRONG_PASSWORD },
  { name: 'http token', value: HTTP_TOKEN },
  { name: 'graphql token', value: GRAPHQL_TOKEN },
  { name: 'redis password', value: REDIS_PASSWORD },
];
const answers: Exposed[] = [];

async function createSystem(body: Record<string, unknown>): Promise<void> {
  const created = await api.call('POST', '/v1/systems', { body });
  expect(created.status, created.text).toBe(201);
}

async function test(
  systemId: string,
  options: { environment?: 'dev' | 'prod'; key?: string; on?: TestApi } = {},
) {
  const query = options.environment ? `?environment=${options.environment}` : '';
  const answer = await (options.on ?? api).call<ConnectionTestResult & ErrorBody>(
    'POST',
    `/v1/systems/${systemId}/test${query}`,
    { key: options.key ?? TEST_ADMIN_KEY },
  );
  answers.push({ where: `test ${systemId}`, text: answer.text });
  return answer;
}

/** A test that ran: its outcome. */
async function tested(systemId: string, environment?: 'dev' | 'prod'): Promise<ConnectionTestResult> {
  const answer = await test(systemId, environment ? { environment } : {});
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

async function createKey(body: Record<string, unknown>): Promise<string> {
  const created = await api.call<{ key: string }>('POST', '/v1/api-keys', { body });
  expect(created.status, created.text).toBe(201);
  return created.body.key;
}

afterAll(() => {
  expect(summarise(findSecrets(secrets, answers))).toEqual([]);
});

describe('HTTP systems', () => {
  const target = useHttpTarget();

  beforeAll(async () => {
    target.route('GET', '/api', (req) =>
      req.headers.authorization === `Bearer ${HTTP_TOKEN}`
        ? { body: { hello: 'world' } }
        : { status: 401, body: { error: 'who are you?' } },
    );
    target.route('GET', '/forbidden', { status: 403, body: { error: 'not for you' } });
    target.route('GET', '/broken', { status: 500, body: { error: 'down' } });
    await createSystem({
      id: 'web',
      url: `${target.url}/api`,
      authType: 'bearer',
      credentials: { bearerToken: HTTP_TOKEN },
    });
    await createSystem({
      id: 'web',
      environment: 'dev',
      url: `${target.url}/api`,
      authType: 'bearer',
      credentials: { bearerToken: WRONG_PASSWORD },
    });
  });

  it('GETs the base URL with the stored credentials and says what it tried', async () => {
    const result = await tested('web');
    expect(result).toMatchObject({
      systemId: 'web',
      environment: 'prod',
      protocol: 'http',
      success: true,
      tried: `GET ${target.url}/api`,
    });
    expect(result.error).toBeUndefined();
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(result.testedAt)).not.toBeNaN();
    const request = target.requests.findLast((req) => req.path === '/api');
    expect(request?.method).toBe('GET');
    expect(request?.headers.authorization).toBe(`Bearer ${HTTP_TOKEN}`);
  });

  it('tests the variant ?environment= names: a refused token (401) fails, naming the status', async () => {
    const result = await tested('web', 'dev');
    expect(result).toMatchObject({ environment: 'dev', success: false });
    expect(result.error).toMatch(/^HTTP 401 GET http:\/\/127\.0\.0\.1:\d+\/api: /);
  });

  it('counts any answer below 500 but 401 and 403 as reachable (a 404 of the base URL)', async () => {
    await createSystem({
      id: 'bare',
      url: `${target.url}/nothing-here`,
      authType: 'bearer',
      credentials: { bearerToken: HTTP_TOKEN },
    });
    const result = await tested('bare');
    expect(result.success).toBe(true);
    expect(result.error).toBeUndefined();
    expect(result.detail).toContain('HTTP 404');
    expect(result.detail).toContain('below 500 other than 401 and 403');
  });

  it('fails on 403 and on 500', async () => {
    await createSystem({ id: 'forbidden', url: `${target.url}/forbidden` });
    await createSystem({ id: 'broken', url: `${target.url}/broken` });
    const forbidden = await tested('forbidden');
    expect(forbidden.success).toBe(false);
    expect(forbidden.error).toMatch(/^HTTP 403 GET /);
    const broken = await tested('broken');
    expect(broken.success).toBe(false);
    expect(broken.error).toMatch(/^HTTP 500 GET /);
  });

  it('fails when nothing listens', async () => {
    await createSystem({ id: 'gone', url: 'http://127.0.0.1:1/api' });
    const result = await tested('gone');
    expect(result.success).toBe(false);
    expect(result.error).toContain('ECONNREFUSED');
  });

  it('is refused by the egress guard for the cloud metadata address, before any request', async () => {
    await createSystem({ id: 'metadata', url: 'http://169.254.169.254/latest/meta-data' });
    const result = await tested('metadata');
    expect(result.success).toBe(false);
    expect(result.error).toContain('refused to connect to 169.254.169.254');
  });
});

describe('OAuth systems', () => {
  const idp = useOAuthProvider({ redirectUris: [] });

  it('fetches the token kubeglue manages and sends it, as a run does', async () => {
    await createSystem({
      ...idp.clientCredentialsSystem('idp_api', { scopes: 'api:read' }),
      url: `${idp.apiUrl}/api/whoami`,
    });
    const before = { tokens: idp.tokenRequests.client_credentials ?? 0, ok: idp.apiCalls.ok };
    const result = await tested('idp_api');
    expect(result).toMatchObject({ protocol: 'http', success: true });
    expect((idp.tokenRequests.client_credentials ?? 0) - before.tokens).toBe(1);
    expect(idp.apiCalls.ok - before.ok).toBe(1);
    for (const [index, value] of [...idp.acceptedTokens].entries()) {
      secrets.push({ name: `oauth access token ${index}`, value });
    }
  });
});

describe('GraphQL systems', () => {
  let graphql: GraphqlServer;

  beforeAll(async () => {
    graphql = await startGraphqlServer({ port: 0 });
    await createSystem({
      id: 'tracker',
      url: graphql.url,
      documentationUrl: `${graphql.endpoint}#graphql`,
      authType: 'bearer',
      credentials: { bearerToken: GRAPHQL_TOKEN },
    });
    await createSystem({
      id: 'tracker',
      environment: 'dev',
      url: graphql.endpoint,
      authType: 'bearer',
      credentials: { bearerToken: WRONG_PASSWORD },
    });
  });
  afterAll(() => graphql?.stop());

  it('asks the endpoint (its documentation URL, without the #graphql hint) for { __typename }', async () => {
    const result = await tested('tracker');
    expect(result).toMatchObject({
      protocol: 'graphql',
      success: true,
      tried: `GraphQL query { __typename } at ${graphql.endpoint}`,
    });
    const sent = graphql.requests.findLast((request) => request.path === '/graphql');
    expect(sent?.body).toMatchObject({ query: '{ __typename }' });
  });

  it('fails with the GraphQL errors when the token is refused', async () => {
    const result = await tested('tracker', 'dev');
    expect(result.success).toBe(false);
    expect(result.error).toContain('GraphQL errors');
  });
});

describe('Postgres systems', () => {
  let database: TestDatabase;
  let role: TestRole;
  const password = 'pg-role-SECRET-3a9c';
  secrets.push({ name: 'postgres password', value: password });

  beforeAll(async () => {
    database = await createTestDatabase(inject('databaseUrl'));
    role = await createPasswordRole(database, password);
    const url = new URL(database.url);
    const bare = `postgres://${url.host}${url.pathname}`;
    await createSystem({
      id: 'warehouse',
      url: bare,
      authType: 'dataStore',
      credentials: { username: role.name, password },
    });
    await createSystem({
      id: 'warehouse',
      environment: 'dev',
      url: bare,
      authType: 'dataStore',
      credentials: { username: role.name, password: WRONG_PASSWORD },
    });
    // The connection URL in the credentials, and no url of the system's own.
    await createSystem({ id: 'warehouse_url', authType: 'dataStore', credentials: { url: role.url } });
  });
  afterAll(async () => {
    // The database first: its drop ends the sessions kubeglue's pool holds as the role.
    await database?.drop();
    await role?.drop();
  });

  it('runs SELECT 1 with the stored login', async () => {
    const url = new URL(database.url);
    const result = await tested('warehouse');
    expect(result).toMatchObject({
      protocol: 'postgres',
      success: true,
      tried: `SELECT 1 on postgres://${url.host}${url.pathname}`,
    });
  });

  it('fails clearly on a wrong password', async () => {
    const result = await tested('warehouse', 'dev');
    expect(result.success).toBe(false);
    expect(result.error).toContain('password authentication failed');
  });

  it('tests the connection URL of the credentials, showing it without its login', async () => {
    const url = new URL(database.url);
    const result = await tested('warehouse_url');
    expect(result.success, result.error).toBe(true);
    expect(result.tried).toBe(`SELECT 1 on postgres://${url.host}${url.pathname}`);
    expect(result.tried).not.toContain(role.name);
  });
});

describe.skipIf(mariadbSkip())('MySQL and MariaDB systems', () => {
  const database = useMariaDb();

  beforeAll(async () => {
    secrets.push({ name: 'mariadb password', value: database.password });
    await createSystem({
      id: 'shop',
      url: database.bareUrl,
      authType: 'dataStore',
      credentials: { username: database.user, password: database.password },
    });
    await createSystem({
      id: 'shop',
      environment: 'dev',
      url: database.bareUrl.replace('mysql:', 'mariadb:'),
      authType: 'dataStore',
      credentials: { username: database.user, password: WRONG_PASSWORD },
    });
  });

  it('runs SELECT 1 with the stored login', async () => {
    const result = await tested('shop');
    expect(result).toMatchObject({
      protocol: 'mysql',
      success: true,
      tried: `SELECT 1 on ${database.bareUrl}`,
    });
  });

  it('fails clearly on a wrong password, the user shown as its placeholder', async () => {
    const result = await tested('shop', 'dev');
    expect(result.success).toBe(false);
    expect(result.error).toContain('ER_ACCESS_DENIED_ERROR');
    expect(result.error).toContain('<<shop_username>>');
  });
});

describe.skipIf(redisServerMissing())('Redis systems', () => {
  const redis = useRedisServer();

  beforeAll(async () => {
    secrets.push({ name: 'redis reader password', value: REDIS_USERS.reader.password });
    await createSystem({
      id: 'cache',
      url: `${redis.url}/3`,
      authType: 'dataStore',
      credentials: { password: REDIS_PASSWORD },
    });
    await createSystem({
      id: 'cache',
      environment: 'dev',
      url: `${redis.url}/3`,
      authType: 'dataStore',
      credentials: { password: WRONG_PASSWORD },
    });
    await createSystem({
      id: 'cache_reader',
      url: redis.url,
      authType: 'dataStore',
      credentials: { username: 'reader', password: REDIS_USERS.reader.password },
    });
  });

  it('runs DBSIZE, which the server flags read-only', async () => {
    const result = await tested('cache');
    expect(result).toMatchObject({ protocol: 'redis', success: true, tried: `DBSIZE on ${redis.url}/3` });
  });

  it('fails clearly on a wrong password', async () => {
    const result = await tested('cache', 'dev');
    expect(result.success).toBe(false);
    expect(result.error).toContain('WRONGPASS');
  });

  it('reaches a private server through the system’s gateway agent', async () => {
    const agent = await startAgent({
      tunnel_id: 'corp',
      server_url: api.url.replace('http://', 'ws://').replace('127.0.0.1', 'localhost'),
      api_key: TEST_ADMIN_KEY,
      targets: { cache: { address: `127.0.0.1:${redis.port}`, protocol: 'redis' } },
    });
    try {
      await agent.waitFor("tunnel 'corp' registered");
      // A name nothing resolves: only the tunnel can reach it.
      await createSystem({
        id: 'private_cache',
        url: 'redis://cache.corp.internal:6379/0',
        authType: 'dataStore',
        credentials: { password: REDIS_PASSWORD },
        gateway: { tunnelId: 'corp', target: 'cache' },
      });
      const result = await tested('private_cache');
      expect(result).toMatchObject({ success: true, tried: 'DBSIZE on redis://cache.corp.internal:6379/0' });
      expect(agent.output()).not.toContain(REDIS_PASSWORD);
    } finally {
      await agent.kill();
    }
  });

  it('fails for a user that may not read the command table, saying so', async () => {
    const result = await tested('cache_reader');
    expect(result.success).toBe(false);
    expect(result.error).toContain('COMMAND');
  });
});

describe('SFTP and FTP systems', () => {
  const sftp = useSftpServer({ password: 'sftp-SECRET-pw-71' });
  const ftp = useFtpServer({ password: 'ftp-SECRET-pw-52' });
  secrets.push({ name: 'sftp password', value: 'sftp-SECRET-pw-71' });
  secrets.push({ name: 'ftp password', value: 'ftp-SECRET-pw-52' });

  beforeAll(async () => {
    for (const [id, server] of [
      ['files', sftp],
      ['drop', ftp],
    ] as const) {
      await createSystem({
        id,
        url: `${server.url}/`,
        authType: 'dataStore',
        credentials: { username: server.username, password: server.password ?? '' },
      });
      await createSystem({
        id,
        environment: 'dev',
        url: `${server.url}/`,
        authType: 'dataStore',
        credentials: { username: server.username, password: WRONG_PASSWORD },
      });
    }
  });

  it('lists the base path with the stored login', async () => {
    expect(await tested('files')).toMatchObject({
      protocol: 'sftp',
      success: true,
      tried: `list of ${sftp.url}/`,
    });
    expect(await tested('drop')).toMatchObject({
      protocol: 'ftp',
      success: true,
      tried: `list of ${ftp.url}/`,
    });
  });

  it('fails on a wrong password', async () => {
    const files = await tested('files', 'dev');
    expect(files.success).toBe(false);
    expect(files.error).toMatch(/authentication/i);
    const drop = await tested('drop', 'dev');
    expect(drop.success).toBe(false);
    expect(drop.error).toMatch(/530|login/i);
  });
});

describe.skipIf(sambaMissing())('SMB systems', () => {
  const samba = useSamba();

  beforeAll(async () => {
    secrets.push({ name: 'samba password', value: samba.password });
    await writeFile(join(samba.shares.files, 'report.csv'), 'a,b\n1,2\n');
    await createSystem({
      id: 'nas',
      url: `${samba.url}/files`,
      authType: 'dataStore',
      credentials: { username: samba.username, password: samba.password, domain: samba.workgroup },
    });
    await createSystem({
      id: 'nas',
      environment: 'dev',
      url: `${samba.url}/files`,
      authType: 'dataStore',
      credentials: { username: samba.username, password: WRONG_PASSWORD, domain: samba.workgroup },
    });
  });

  it('lists the share with the stored login', async () => {
    expect(await tested('nas')).toMatchObject({
      protocol: 'smb',
      success: true,
      tried: `list of ${samba.url}/files`,
    });
  });

  it('fails clearly on a wrong password', async () => {
    const result = await tested('nas', 'dev');
    expect(result.success).toBe(false);
    expect(result.error).toContain('STATUS_LOGON_FAILURE');
  });
});

describe('systems no test can read', () => {
  it('refuses MSSQL and MongoDB systems, which no step can use yet', async () => {
    for (const [id, url, name] of [
      ['ledger', 'mssql://db.internal:1433/ledger', 'MSSQL'],
      ['events', 'mongodb://db.internal:27017/events', 'MongoDB'],
      ['events_srv', 'mongodb+srv://cluster.example.net/events', 'MongoDB'],
    ] as const) {
      await createSystem({ id, url, authType: 'dataStore', credentials: { password: 'x-unused-1' } });
      const answer = await test(id);
      expect(answer.status, answer.text).toBe(422);
      expect(answer.body.error.code).toBe('KG_ERR_PROTOCOL_UNSUPPORTED');
      expect(answer.body.error.message).toContain(`${name} (`);
      expect(answer.body.error.message).toContain('no step can use yet');
    }
  });

  it('refuses a system without a URL, naming what to give', async () => {
    await createSystem({ id: 'nowhere', authType: 'bearer', credentials: { bearerToken: 'x-unused-22' } });
    const answer = await test('nowhere');
    expect(answer.status).toBe(422);
    expect(answer.body.error).toMatchObject({ code: 'KG_ERR_SYSTEM_NO_URL' });
    expect(answer.body.error.message).toContain('credentials.url');
  });

  it('answers 404 for a system that does not exist', async () => {
    const answer = await test('missing-system');
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe('KG_ERR_SYSTEM_NOT_FOUND');
  });
});

describe('who may test', () => {
  it('needs systems:read and runs:execute, and only systems the key may use', async () => {
    const reader = await createKey({ name: 'reader', scopes: ['systems:read'] });
    const runner = await createKey({ name: 'runner', scopes: ['runs:execute'] });
    const both = await createKey({ name: 'tester', scopes: ['systems:read', 'runs:execute'] });
    const elsewhere = await createKey({
      name: 'other systems',
      scopes: ['systems:read', 'runs:execute'],
      systemIds: ['web'],
    });
    for (const [key, missing] of [
      [reader, 'runs:execute'],
      [runner, 'systems:read'],
    ] as const) {
      const refused = await test('gone', { key });
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('KG_ERR_SCOPE_REQUIRED');
      expect(refused.body.error.message).toContain(`'${missing}'`);
    }
    expect((await test('gone', { key: both })).status).toBe(200);
    const hidden = await test('gone', { key: elsewhere });
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe('KG_ERR_SYSTEM_NOT_FOUND');
  });
});

describe('what a test leaves behind', () => {
  it('records no run', async () => {
    const runs = await api.call<{ data: unknown[]; total: number }>('GET', '/v1/runs');
    expect(runs.status).toBe(200);
    expect(runs.body.data).toEqual([]);
  });

  it('writes one log line per test: the system, the variant, the key, the outcome, never a secret', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kubeglue-connection-test-'));
    let server: ServerProcess | undefined;
    try {
      server = await startServerProcess(testServerEnv(dir, { KUBEGLUE_LOG_LEVEL: 'info' }));
      const call = (method: string, path: string, body?: unknown) =>
        fetch(`${server?.url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${TEST_ADMIN_KEY}`,
            ...(body ? { 'content-type': 'application/json' } : {}),
          },
          ...(body ? { body: JSON.stringify(body) } : {}),
        }).then((response) => response.json());
      await call('POST', '/v1/systems', {
        id: 'logged',
        url: 'http://127.0.0.1:1',
        authType: 'bearer',
        credentials: { bearerToken: HTTP_TOKEN },
      });
      const result = (await call('POST', '/v1/systems/logged/test')) as ConnectionTestResult;
      expect(result.success).toBe(false);
      const lines = () => logLines(server?.output() ?? '').filter((line) => line.systemId === 'logged');
      await expect.poll(() => lines().length).toBe(1);
      expect(lines()[0]).toMatchObject({
        msg: expect.stringMatching(
          /^connection test of system 'logged' \(prod\) by API key \S+: failed in \d+ ms$/,
        ),
        environment: 'prod',
        success: false,
      });
      expect(summarise(findSecrets(secrets, [{ where: 'server log', text: server.output() }]))).toEqual([]);
    } finally {
      server?.child.kill('SIGKILL');
      await server?.exited;
      await rm(dir, { recursive: true, force: true });
    }
  });
});
