/**
 * POST /v1/runs/{runId}/replay: a recorded run's tool executed again against its recording only. The HTTP
 * target refuses (and the test fails on) any request after the recording; Postgres and Redis steps replay
 * from their recording too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { ReplayAnswer } from '../../../contract/api/replay.ts';
import { callOk, startTestApi, type TestApi } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import {
  crmSteps,
  crmSystem,
  routeCrm,
  useSealedAfterRecording,
  useStoreSystems,
} from '../../support/recorded-systems.ts';
import { REDIS_PASSWORD, redisServerMissing } from '../../support/redis-server.ts';

const TOKEN = 'replay-bearer-SECRET-5e1d77';
const API_KEY = 'replay-apikey-SECRET-0b57ac';

/** A paginated step (three pages), a loop over three of its items, and a transform. */
function tool(id: string, total = 'sourceData.detail.length') {
  return {
    id,
    steps: [
      ...crmSteps(),
      {
        id: 'summary',
        config: {
          type: 'transform',
          transformCode: `(sourceData) => ({ total: ${total}, names: sourceData.list.data.map((i) => i.name) })`,
        },
      },
    ],
    outputTransform: '(sourceData) => sourceData.summary.data',
  };
}

describe('replay of a recorded run', () => {
  const target = useHttpTarget();
  let api: TestApi;
  // Every test of the file replays; none may reach the target.
  const recorded = useSealedAfterRecording();

  function replay<T = ReplayAnswer>(runId: string, body?: unknown, key?: string) {
    return api.call<T>('POST', `/v1/runs/${encodeURIComponent(runId)}/replay`, {
      ...(body !== undefined ? { body } : {}),
      ...(key !== undefined ? { key } : {}),
    });
  }

  beforeAll(async () => {
    api = await startTestApi();
    routeCrm(target, recorded.note);
    await callOk(api, 'POST', '/v1/systems', crmSystem(target.url, { bearerToken: TOKEN, apiKey: API_KEY }));
    await callOk(api, 'POST', '/v1/tools', tool('pipeline'));
    await callOk(api, 'POST', '/v1/tools', tool('unrecorded'));
    for (const [id, record] of [
      ['pipeline', true],
      ['unrecorded', false],
    ] as const) {
      const run = await api.call<{ status: string; error?: string }>('POST', `/v1/tools/${id}/run`, {
        body: { runId: `${id}-1`, options: { record } },
      });
      expect(run.body.status, run.text).toBe('success');
    }
    recorded.seal();
  }, 60_000);

  afterAll(async () => {
    await api?.stop();
  });

  it('replays the current definition unchanged: same output, every step unchanged, no request', async () => {
    const answer = await replay('pipeline-1');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.definition).toBe('current');
    expect(answer.body.replay.success).toBe(true);
    expect(answer.body.replay.data).toEqual(answer.body.original.data);
    expect(answer.body.diff.changed).toBe(false);
    expect(answer.body.diff.steps.map((s) => [s.stepId, s.status])).toEqual([
      ['list', 'unchanged'],
      ['detail', 'unchanged'],
      ['summary', 'unchanged'],
    ]);
    expect(recorded.late).toEqual([]);
  });

  it('replays a changed transform: the new output and its difference, no request reaches the target', async () => {
    const answer = await replay('pipeline-1', {
      tool: tool('pipeline', 'sourceData.detail.length * 10'),
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.definition).toBe('body');
    expect(answer.body.original.data).toMatchObject({ total: 3 });
    expect(answer.body.replay.data).toMatchObject({ total: 30 });
    expect(answer.body.diff.changed).toBe(true);
    expect(answer.body.diff.output.changes).toEqual([{ path: '/total', before: 3, after: 30 }]);
    expect(answer.body.diff.steps.map((s) => [s.stepId, s.status])).toEqual([
      ['list', 'unchanged'],
      ['detail', 'unchanged'],
      ['summary', 'changed'],
    ]);
    expect(answer.body.diff.steps[2]?.data?.changes).toEqual([{ path: '/total', before: 3, after: 30 }]);
    expect(recorded.late).toEqual([]);
  });

  it('fails a step whose request differs from the recorded one, showing the difference', async () => {
    const changed = tool('pipeline');
    changed.steps[1] = {
      ...changed.steps[1],
      config: { ...changed.steps[1]?.config, url: '/things/<<currentItem>>' },
    } as (typeof changed.steps)[1];
    const answer = await replay('pipeline-1', { tool: changed });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.replay.success).toBe(false);
    const detail = answer.body.diff.steps.find((s) => s.stepId === 'detail');
    expect(detail).toMatchObject({ status: 'changed', success: { before: true, after: false } });
    expect(detail?.error).toContain('differs from the recorded one');
    expect(detail?.error).toContain(`url: recorded "${target.url}/items/1", now "${target.url}/things/1"`);
    expect(recorded.late).toEqual([]);
  });

  it('fails a step that needs an exchange the run did not make, naming it', async () => {
    const more = tool('pipeline');
    more.steps[1] = {
      ...more.steps[1],
      dataSelector: '(sourceData) => sourceData.list.data.map((item) => item.id)',
    } as (typeof more.steps)[1];
    const answer = await replay('pipeline-1', { tool: more });
    expect(answer.status, answer.text).toBe(200);
    const detail = answer.body.diff.steps.find((s) => s.stepId === 'detail');
    expect(detail?.error).toContain('no recorded exchange for step detail, loop item 3');
    expect(recorded.late).toEqual([]);
  });

  it('never answers a credential', async () => {
    const answer = await replay('pipeline-1', { tool: tool('pipeline', '1') });
    expect(answer.text).toContain('<<crm_bearerToken>>');
    for (const secret of [TOKEN, API_KEY, Buffer.from(TOKEN).toString('base64')]) {
      expect(answer.text).not.toContain(secret);
    }
  });

  it('refuses a run that recorded nothing, and an invalid definition', async () => {
    const none = await replay<ErrorBody>('unrecorded-1');
    expect(none.status).toBe(409);
    expect(none.body.error.code).toBe('KG_ERR_RUN_NOT_REPLAYABLE');
    expect(none.body.error.message).toContain('recorded nothing');
    const invalid = await replay<ErrorBody>('pipeline-1', { tool: { id: 'pipeline', steps: 'nope' } });
    expect(invalid.status).toBe(400);
  });

  it('answers 404 to a key that may not read the run, and 403 without runs:execute', async () => {
    const other = await callOk<{ key: string }>(api, 'POST', '/v1/api-keys', {
      name: 'other',
      toolIds: ['unrecorded'],
    });
    const hidden = await replay<ErrorBody>('pipeline-1', {}, other.key);
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe('KG_ERR_RUN_NOT_FOUND');
    const reader = await callOk<{ key: string }>(api, 'POST', '/v1/api-keys', {
      name: 'reader',
      scopes: ['runs:read'],
    });
    expect((await replay('pipeline-1', {}, reader.key)).status).toBe(403);
    const allowed = await callOk<{ key: string }>(api, 'POST', '/v1/api-keys', {
      name: 'ok',
      toolIds: ['pipeline'],
    });
    expect((await replay('pipeline-1', {}, allowed.key)).status).toBe(200);
  });
});

describe.skipIf(redisServerMissing())('replay of Postgres and Redis steps', () => {
  const password = 'replay-pg-SECRET-9a1c';
  const stores = useStoreSystems(password);
  /** The database's URL without a login: the system's and the step's. */
  const pgUrl = () => stores.pgUrl;

  beforeAll(async () => {
    await callOk(stores.api, 'POST', '/v1/tools', {
      id: 'stores',
      record: true,
      steps: [
        {
          id: 'rows',
          config: {
            systemId: 'warehouse',
            url: pgUrl(),
            body: { query: 'SELECT $1::int AS n', params: ['<<n>>'] },
          },
        },
        {
          id: 'cached',
          modify: true,
          config: {
            systemId: 'cache',
            url: stores.redisUrl,
            body: { command: 'SET', args: ['replayed', '<<n>>'] },
          },
        },
      ],
      outputTransform: '(sourceData) => ({ n: sourceData.rows.data[0].n, cached: sourceData.cached.data })',
    });
    const run = await stores.api.call<{ status: string }>('POST', '/v1/tools/stores/run', {
      body: { runId: 'stores-1', inputs: { n: 4 } },
    });
    expect(run.body.status, run.text).toBe('success');
  }, 60_000);

  it('answers both from the recording, and fails the Redis step when its command changes', async () => {
    // The role is gone: a replay that connected to Postgres would fail to log in.
    await stores.role.drop();
    const same = await stores.api.call<ReplayAnswer>('POST', '/v1/runs/stores-1/replay', {});
    expect(same.status, same.text).toBe(200);
    expect(same.body.replay).toMatchObject({ success: true, data: { n: 4, cached: 'OK' } });
    expect(same.body.diff.changed).toBe(false);
    const other = await stores.api.call<ReplayAnswer>('POST', '/v1/runs/stores-1/replay', {
      body: { inputs: { n: 5 } },
    });
    expect(other.status, other.text).toBe(200);
    const rows = other.body.diff.steps.find((s) => s.stepId === 'rows');
    expect(rows?.error).toContain('body: recorded');
    expect(JSON.stringify(other.body)).not.toContain(password);
    expect(JSON.stringify(other.body)).not.toContain(REDIS_PASSWORD);
  });
});
