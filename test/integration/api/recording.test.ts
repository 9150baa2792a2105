/**
 * Recording (options.record, the tool's record): every exchange of a run's request steps stored with the
 * run, redacted, within KUBEGLUE_MAX_RECORDING_BYTES, answered by GET /v1/runs/{runId}/recording and
 * removed with the run. Against a real HTTP target, on both stores (SQLite and Postgres); Postgres and
 * Redis steps against real servers.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { DriverName } from '../../../store/index.ts';
import { startTestApi, type TestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { createTestDatabase, type TestDatabase } from '../../support/postgres.ts';
import { crmSteps, crmSystem, routeCrm, useStoreSystems } from '../../support/recorded-systems.ts';
import { REDIS_PASSWORD, redisServerMissing } from '../../support/redis-server.ts';

const TOKEN = 'rec-bearer-SECRET-7f3a91';
const API_KEY = 'rec-apikey-SECRET-c0ffee';
const CAP = 6000;

/** A paginated step (three pages) and a loop over three of its items, on the system crm. */
const steps = crmSteps();

interface Exchange {
  stepId: string;
  protocol: string;
  item?: number;
  page?: number;
  request: {
    method?: string;
    url: string;
    query?: Array<[string, string]>;
    headers?: Record<string, string>;
    body?: unknown;
  };
  response?: { status?: number; headers?: Record<string, string>; data?: unknown };
  error?: string;
}
interface Recording {
  exchanges: number;
  bytes: number;
  truncated: boolean;
  leftOut?: { exchanges: number; bytes: number; steps: string[] };
  entries: Exchange[];
}
interface RunAnswer {
  runId: string;
  status: string;
  error?: string;
  recording?: { exchanges: number; bytes: number; truncated: boolean };
}

describe.each<DriverName>(['sqlite', 'pg'])('recording on %s', (driver) => {
  const target = useHttpTarget();
  let api: TestApi;
  let database: TestDatabase | undefined;

  async function run(toolId: string, body: object = {}): Promise<RunAnswer> {
    const answer = await api.call<RunAnswer>('POST', `/v1/tools/${toolId}/run`, { body });
    expect(answer.status, answer.text).toBeLessThan(300);
    return answer.body;
  }

  async function recordingOf(runId: string): Promise<Recording> {
    const answer = await api.call<{ runId: string; recording: Recording }>(
      'GET',
      `/v1/runs/${encodeURIComponent(runId)}/recording`,
    );
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.runId).toBe(runId);
    return answer.body.recording;
  }

  beforeAll(async () => {
    if (driver === 'pg') database = await createTestDatabase(inject('databaseUrl'));
    api = await startTestApi({
      KUBEGLUE_MAX_RECORDING_BYTES: String(CAP),
      ...(database ? { KUBEGLUE_DATABASE_URL: database.url } : {}),
    });
    routeCrm(target);
    target.route('GET', '/big', () => ({ body: { blob: 'x'.repeat(2000) } }));
    const system = await api.call('POST', '/v1/systems', {
      body: crmSystem(target.url, { bearerToken: TOKEN, apiKey: API_KEY }),
    });
    expect(system.status, system.text).toBeLessThan(300);
    for (const tool of [
      { id: 'pages-and-items', steps },
      { id: 'always-recorded', record: true, steps },
      {
        id: 'big',
        steps: [
          {
            id: 'many',
            dataSelector: '() => [1, 2, 3, 4, 5, 6]',
            config: { systemId: 'crm', url: '/big' },
          },
        ],
        outputTransform: '(sourceData) => sourceData.many.length',
      },
    ]) {
      const saved = await api.call('POST', '/v1/tools', { body: tool });
      expect(saved.status, saved.text).toBeLessThan(300);
    }
  }, 60_000);

  afterAll(async () => {
    await api?.stop();
    await database?.drop();
  });

  it('keeps every page and every loop item in order, with the requests as sent and what the target answered', async () => {
    const done = await run('pages-and-items', { runId: `ordered-${driver}`, options: { record: true } });
    expect(done.status, done.error).toBe('success');
    expect(done.recording).toMatchObject({ exchanges: 6, truncated: false });
    const recording = await recordingOf(done.runId);
    expect(recording).toMatchObject({ exchanges: 6, truncated: false, bytes: done.recording?.bytes });
    expect(recording.entries.map((e) => [e.stepId, e.page ?? null, e.item ?? null])).toEqual([
      ['list', 1, null],
      ['list', 2, null],
      ['list', 3, null],
      ['detail', null, 0],
      ['detail', null, 1],
      ['detail', null, 2],
    ]);
    const [first, , third, firstItem] = recording.entries as [Exchange, Exchange, Exchange, Exchange];
    expect(first.protocol).toBe('http');
    expect(first.request).toMatchObject({
      method: 'GET',
      url: `${target.url}/items`,
      query: [
        ['page', '1'],
        ['pageSize', '2'],
      ],
    });
    expect(first.request.headers?.Authorization).toBe('<<redacted>>');
    expect(first.response).toMatchObject({
      status: 200,
      headers: { 'x-page': '1' },
      data: [
        { id: 1, name: 'item 1', sentAuth: 'Bearer <<crm_bearerToken>>' },
        { id: 2, name: 'item 2', sentAuth: 'Bearer <<crm_bearerToken>>' },
      ],
    });
    expect(third.response?.data).toEqual([{ id: 5, name: 'item 5', sentAuth: 'Bearer <<crm_bearerToken>>' }]);
    expect(firstItem.request).toMatchObject({
      url: `${target.url}/items/1`,
      query: [['key', '<<redacted>>']],
    });
    expect(firstItem.response?.data).toEqual({ id: 1, detail: true, sentKey: '<<crm_apiKey>>' });
    // What the target really received carried the credentials.
    expect(target.requests.some((r) => r.headers.authorization === `Bearer ${TOKEN}`)).toBe(true);
    expect(target.requests.some((r) => r.url.includes(API_KEY))).toBe(true);
  });

  it('never stores a credential: not in a header, the query, a URL or an echoed answer', async () => {
    const done = await run('pages-and-items', { runId: `secrets-${driver}`, options: { record: true } });
    const stored = JSON.stringify(await api.embedded.store.getRunRecording(done.runId));
    expect(stored).toContain('<<crm_bearerToken>>');
    for (const secret of [TOKEN, API_KEY, Buffer.from(TOKEN).toString('base64'), encodeURIComponent(TOKEN)]) {
      expect(stored).not.toContain(secret);
    }
    const answered = await api.call('GET', `/v1/runs/${done.runId}/recording`);
    expect(answered.text).not.toContain(TOKEN);
    expect(answered.text).not.toContain(API_KEY);
  });

  it('leaves out what is past the size cap, says so, and the run still succeeds', async () => {
    const done = await run('big', { runId: `capped-${driver}`, options: { record: true } });
    expect(done.status, done.error).toBe('success');
    expect(done.recording?.truncated).toBe(true);
    const recording = await recordingOf(done.runId);
    expect(recording.truncated).toBe(true);
    expect(recording.bytes).toBeLessThanOrEqual(CAP);
    expect(recording.exchanges).toBeGreaterThan(0);
    expect(recording.exchanges).toBeLessThan(6);
    expect(recording.leftOut).toMatchObject({ exchanges: 6 - recording.exchanges, steps: ['many'] });
    expect(recording.leftOut?.bytes).toBeGreaterThan(0);
    expect(recording.entries.map((e) => e.item)).toEqual([...Array(recording.exchanges).keys()]);
    expect(Buffer.byteLength(JSON.stringify(recording.entries))).toBe(recording.bytes);
  });

  it('is read with the rules of reading the run: a key limited to other tools does not see it', async () => {
    const done = await run('pages-and-items', { runId: `guarded-${driver}`, options: { record: true } });
    const created = await api.call<{ key: string }>('POST', '/v1/api-keys', {
      body: { name: `big only ${driver}`, toolIds: ['big'] },
    });
    expect(created.status, created.text).toBeLessThan(300);
    const refused = await api.call<{ error: { code: string } }>('GET', `/v1/runs/${done.runId}/recording`, {
      key: created.body.key,
    });
    expect(refused.status).toBe(404);
    expect(refused.body.error.code).toBe('KG_ERR_RUN_NOT_FOUND');
    expect(refused.text).not.toContain('item 1');
  });

  it('stores nothing for a run that does not record, and says why it has no recording', async () => {
    const done = await run('pages-and-items', { runId: `plain-${driver}` });
    expect(done.status).toBe('success');
    expect(done.recording).toBeUndefined();
    expect(await api.embedded.store.getRunRecording(done.runId)).toBeUndefined();
    const answer = await api.call<{ error: { code: string; message: string } }>(
      'GET',
      `/v1/runs/${done.runId}/recording`,
    );
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe('KG_ERR_RUN_NOT_RECORDED');
    expect(answer.body.error.message).toContain('options.record');
  });

  it("records a tool's runs when the tool says so, unless the run's options.record says otherwise", async () => {
    const byTool = await run('always-recorded', { runId: `by-tool-${driver}` });
    expect(byTool.recording).toMatchObject({ exchanges: 6 });
    const refused = await run('always-recorded', {
      runId: `opted-out-${driver}`,
      options: { record: false },
    });
    expect(refused.recording).toBeUndefined();
    expect(await api.embedded.store.getRunRecording(refused.runId)).toBeUndefined();
    const tool = await api.call<{ record?: boolean }>('GET', '/v1/tools/always-recorded');
    expect(tool.body.record).toBe(true);
    const plain = await api.call<{ record?: boolean }>('GET', '/v1/tools/pages-and-items');
    expect(plain.body.record).toBeUndefined();
  });

  it('records async runs too', async () => {
    const accepted = await run('pages-and-items', {
      runId: `async-${driver}`,
      options: { async: true, record: true },
    });
    const done = await waitForRun<RunAnswer>(api, accepted.runId);
    expect(done.status, done.error).toBe('success');
    expect(done.recording).toMatchObject({ exchanges: 6, truncated: false });
    const recording = await recordingOf(done.runId);
    expect(recording.entries.map((e) => e.stepId)).toEqual([
      'list',
      'list',
      'list',
      'detail',
      'detail',
      'detail',
    ]);
    expect(JSON.stringify(recording)).not.toContain(TOKEN);
  });

  it('records only the steps a resumed run executes, not the ones it reuses', async () => {
    const flaky = {
      id: `flaky-${driver}`,
      steps: [
        steps[0],
        {
          id: 'detail',
          dataSelector: '(sourceData) => sourceData.list.data.slice(0, 2).map((item) => item.id)',
          config: { systemId: 'crm', url: `/flaky-${driver}/<<currentItem>>` },
        },
      ],
    };
    expect((await api.call('POST', '/v1/tools', { body: flaky })).status).toBeLessThan(300);
    const failed = await run(flaky.id, { runId: `to-resume-${driver}`, options: { record: true } });
    expect(failed.status).toBe('failed');
    // The failed run recorded the pages and the item that failed (404).
    const before = await recordingOf(failed.runId);
    expect(before.entries.map((e) => [e.stepId, e.response?.status])).toEqual([
      ['list', 200],
      ['list', 200],
      ['list', 200],
      ['detail', 404],
    ]);
    for (const id of [1, 2]) target.route('GET', `/flaky-${driver}/${id}`, { body: { id, fixed: true } });
    const resumed = await api.call<RunAnswer>('POST', `/v1/runs/${failed.runId}/resume`, {
      body: { options: { record: true } },
    });
    expect(resumed.status, resumed.text).toBeLessThan(300);
    expect(resumed.body.status, resumed.body.error).toBe('success');
    const after = await recordingOf(resumed.body.runId);
    expect(after.entries.map((e) => [e.stepId, e.item])).toEqual([
      ['detail', 0],
      ['detail', 1],
    ]);
  });

  it('is removed with its run by the retention sweep, and with its results by result retention', async () => {
    const store = api.embedded.store;
    const future = () => new Date(Date.now() + 60_000).toISOString();
    // Run retention: the run and everything of it.
    const swept = await run('pages-and-items', { runId: `swept-${driver}`, options: { record: true } });
    expect(await store.getRunRecording(swept.runId)).toBeDefined();
    while ((await store.pruneRuns({ before: future(), limit: 100 })) > 0);
    expect(await store.getRun(swept.runId)).toBeUndefined();
    expect(await store.getRunRecording(swept.runId)).toBeUndefined();
    // Result retention: the exchanges go with the results; the run keeps its summary and says why.
    const kept = await run('pages-and-items', {
      runId: `results-swept-${driver}`,
      options: { record: true },
    });
    while ((await store.pruneRunOutputs({ before: future(), limit: 100 })) > 0);
    expect(await store.getRunRecording(kept.runId)).toBeUndefined();
    const gone = await api.call<{ error: { code: string; message: string } }>(
      'GET',
      `/v1/runs/${kept.runId}/recording`,
    );
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('KG_ERR_RUN_NOT_RECORDED');
    expect(gone.body.error.message).toContain('no longer kept');
  });
});

describe.skipIf(redisServerMissing())('recording of connection protocols', () => {
  const password = 'rec-pg-SECRET-41d2';
  const stores = useStoreSystems(password);
  /** The database's URL without a login: the system's and the step's. */
  const pgUrl = () => stores.pgUrl;

  beforeAll(async () => {
    const saved = await stores.api.call('POST', '/v1/tools', {
      body: {
        id: 'stores',
        steps: [
          {
            id: 'rows',
            config: {
              systemId: 'warehouse',
              url: pgUrl(),
              body: { query: 'SELECT $1::int AS n, $2::text AS said', params: ['<<n>>', 'hello'] },
            },
          },
          {
            id: 'cached',
            modify: true,
            config: {
              systemId: 'cache',
              url: stores.redisUrl,
              body: { command: 'SET', args: ['recorded', '<<n>>'] },
            },
          },
        ],
      },
    });
    expect(saved.status, saved.text).toBeLessThan(300);
  }, 60_000);

  it('keeps a Postgres step and a Redis step: the URL without its password, the body, the data', async () => {
    const answer = await stores.api.call<RunAnswer>('POST', '/v1/tools/stores/run', {
      body: { runId: 'stores-1', inputs: { n: 7 }, options: { record: true } },
    });
    expect(answer.body.status, answer.body.error).toBe('success');
    const { body } = await stores.api.call<{ recording: Recording }>('GET', '/v1/runs/stores-1/recording');
    const [rows, cached] = body.recording.entries as [Exchange, Exchange];
    expect(rows).toMatchObject({
      stepId: 'rows',
      protocol: 'postgres',
      request: {
        url: pgUrl(),
        body: { query: 'SELECT $1::int AS n, $2::text AS said', params: [7, 'hello'] },
      },
      response: { data: [{ n: 7, said: 'hello' }] },
    });
    expect(cached).toMatchObject({
      stepId: 'cached',
      protocol: 'redis',
      request: { url: stores.redisUrl, body: { command: 'SET', args: ['recorded', 7] } },
      response: { data: 'OK' },
    });
    const stored = JSON.stringify(await stores.api.embedded.store.getRunRecording('stores-1'));
    expect(stored).not.toContain(password);
    expect(stored).not.toContain(REDIS_PASSWORD);
  });
});
