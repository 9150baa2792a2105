import { beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { catalogError } from '../../support/api-error.ts';
import { useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const STORED_SECRET = 'stored-secret-token-7f3a9c';
const RUNTIME_SECRET = 'runtime-secret-token-c41d2e';

type List<T> = {
  data: T[];
  page: number;
  limit: number;
  total: number;
  totalExact?: boolean;
  hasMore: boolean;
};

const target = useHttpTarget();
const api = useTestApi();

beforeAll(async () => {
  target.route('GET', '/users', (req) => ({
    body: { users: ['ada', 'linus'], auth: req.headers.authorization ?? null },
  }));
  const system = await api.call('POST', '/v1/systems', {
    body: {
      id: 'crm',
      name: 'CRM',
      url: target.url,
      authType: 'bearer',
      credentials: { bearerToken: STORED_SECRET },
    },
  });
  expect(system.status).toBe(201);
  const tool = await api.call('POST', '/v1/tools', {
    body: {
      id: 'list-users',
      steps: [{ id: 'users', config: { url: '/users', systemId: 'crm' } }],
      outputTransform: '(s) => ({ names: s.users.data.users, sawAuth: s.users.data.auth !== null })',
    },
  });
  expect(tool.status).toBe(201);
});

describe('tools', () => {
  it('creates, reads, updates (steps replace all), lists and deletes a tool', async () => {
    const create = await api.call('POST', '/v1/tools', {
      body: {
        id: 'scratch',
        folder: 'team/a',
        steps: [{ id: 'a', config: { type: 'transform', transformCode: '() => 1' } }],
      },
    });
    expect(create.status).toBe(201);
    expect(create.body).toMatchObject({ id: 'scratch', archived: false, createdAt: expect.any(String) });
    expect(
      (
        await api.call('POST', '/v1/tools', {
          body: { id: 'scratch', steps: [{ id: 'a', config: { url: 'https://x.test' } }] },
        })
      ).status,
    ).toBe(409);

    const update = await api.call<{ steps: unknown[]; name: string; folder: string }>(
      'PUT',
      '/v1/tools/scratch',
      {
        body: {
          name: 'Scratch',
          steps: [{ id: 'b', config: { type: 'transform', transformCode: '() => 2' } }],
        },
      },
    );
    expect(update.status).toBe(200);
    expect(update.body).toMatchObject({ name: 'Scratch', folder: 'team/a' });
    expect(update.body.steps).toHaveLength(1);

    const inFolder = await api.call<List<{ id: string }>>('GET', '/v1/tools?folder=team');
    expect(inFolder.body.data.map((t) => t.id)).toEqual(['scratch']);
    const paged = await api.call<List<{ id: string }>>('GET', '/v1/tools?limit=1&page=1');
    expect(paged.body).toMatchObject({ page: 1, limit: 1, hasMore: true });

    expect((await api.call('DELETE', '/v1/tools/scratch')).body).toEqual({ success: true });
    expect((await api.call('GET', '/v1/tools/scratch')).status).toBe(404);
    expect((await api.call('DELETE', '/v1/tools/scratch')).status).toBe(404);
  });

  it('hides archived tools from the default list and refuses to run them', async () => {
    await api.call('POST', '/v1/tools', {
      body: { id: 'old', steps: [{ id: 'a', config: { type: 'transform', transformCode: '() => 1' } }] },
    });
    await api.call('PUT', '/v1/tools/old', { body: { archived: true } });
    const listed = await api.call<List<{ id: string }>>('GET', '/v1/tools');
    expect(listed.body.data.map((t) => t.id)).not.toContain('old');
    const all = await api.call<List<{ id: string }>>('GET', '/v1/tools?includeArchived=true');
    expect(all.body.data.map((t) => t.id)).toContain('old');
    const run = await api.call<{ error: { message: string } }>('POST', '/v1/tools/old/run', { body: {} });
    expect(run.status).toBe(400);
    expect(run.body.error.message).toMatch(/archived/);
    await api.call('PUT', '/v1/tools/old', { body: { archived: false } });
    expect((await api.call('POST', '/v1/tools/old/run', { body: {} })).status).toBe(200);
  });

  it('refuses a tool whose code does not compile with 422 naming step and field', async () => {
    const bad = await api.call<{ error: { message: string } }>('POST', '/v1/tools', {
      body: {
        id: 'broken',
        steps: [{ id: 'calc', config: { type: 'transform', transformCode: '(s) => s +' } }],
      },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.error.message).toContain('steps[0] (calc).config.transformCode');
  });

  it('refuses a malformed tool with 400 naming the field', async () => {
    const bad = await api.call<{ error: { message: string } }>('POST', '/v1/tools', {
      body: {
        id: 't',
        version: '1.2',
        steps: [{ id: 'a', config: { url: 'https://x.test' }, failureBehavior: 'maybe' }],
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('version');
    expect(bad.body.error.message).toContain('steps[0].failureBehavior');
  });
});

describe('runs', () => {
  it('runs a tool synchronously with the system credentials and returns data and stepResults', async () => {
    const res = await api.call<Run>('POST', '/v1/tools/list-users/run', { body: { inputs: {} } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'success',
      toolId: 'list-users',
      data: { names: ['ada', 'linus'], sawAuth: true },
    });
    expect(res.body.stepResults?.[0]).toMatchObject({ stepId: 'users', success: true });
    expect(res.body.metadata.completedAt).toBeDefined();
    expect(res.headers.get('x-trace-id')).toBeTruthy();
  });

  it('lets runtime credentials override stored ones without persisting them', async () => {
    const res = await api.call<Run>('POST', '/v1/tools/list-users/run', {
      body: { credentials: { crm_bearerToken: RUNTIME_SECRET } },
    });
    expect(res.body.status).toBe('success');
    expect(target.requests.at(-1)?.headers.authorization).toBe(`Bearer ${RUNTIME_SECRET}`);
    const stored = await api.call<Run>('GET', `/v1/runs/${res.body.runId}`);
    expect(JSON.stringify(stored.body)).not.toContain(RUNTIME_SECRET);
  });

  it('runs asynchronously: 202 at once, then the run and its results', async () => {
    const accepted = await api.call<Run>('POST', '/v1/tools/list-users/run', {
      body: { options: { async: true } },
    });
    expect(accepted.status).toBe(202);
    expect(accepted.body.status).toBe('running');
    const done = await waitForRun<Run>(api, accepted.body.runId);
    expect(done.status).toBe('success');
    expect(done).not.toHaveProperty('data');
    const results = await api.call<{ success: boolean; data: { data: unknown; stepResults: unknown[] } }>(
      'GET',
      `/v1/runs/${accepted.body.runId}/results`,
    );
    expect(results.body.success).toBe(true);
    expect(results.body.data.data).toEqual({ names: ['ada', 'linus'], sawAuth: true });
  });

  it('treats a repeated runId with the same inputs as the same run and refuses other inputs', async () => {
    const first = await api.call<Run>('POST', '/v1/tools/list-users/run', {
      body: { runId: 'fixed-run-1', inputs: { a: 1 } },
    });
    const again = await api.call<Run>('POST', '/v1/tools/list-users/run', {
      body: { runId: 'fixed-run-1', inputs: { a: 1 } },
    });
    expect(again.status).toBe(200);
    expect(again.body.runId).toBe('fixed-run-1');
    expect(again.body.metadata.startedAt).toBe(first.body.metadata.startedAt);
    const other = await api.call('POST', '/v1/tools/list-users/run', {
      body: { runId: 'fixed-run-1', inputs: { a: 2 } },
    });
    expect(other.status).toBe(409);
  });

  it('cancels a synchronous run in flight, and answers 400 for finished and 200 for aborted runs', async () => {
    const held = target.hold('/hold');
    await api.call('POST', '/v1/tools', {
      body: { id: 'slow', steps: [{ id: 'wait', config: { url: `${target.url}/hold` } }] },
    });
    const running = api.call<Run>('POST', '/v1/tools/slow/run', { body: { runId: 'sync-to-cancel' } });
    await expect.poll(() => held.length).toBe(1);
    const cancelled = await api.call<Run>('POST', '/v1/runs/sync-to-cancel/cancel');
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('aborted');
    const response = await running;
    expect(response.body.status).toBe('aborted');
    expect((await api.call('POST', '/v1/runs/sync-to-cancel/cancel')).status).toBe(200);
    const finished = await api.call<Run>('POST', '/v1/tools/list-users/run', { body: {} });
    const refused = await api.call<{ error: { message: string } }>(
      'POST',
      `/v1/runs/${finished.body.runId}/cancel`,
    );
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/already succeeded/);
    expect((await api.call('POST', '/v1/runs/no-such-run/cancel')).status).toBe(404);
    for (const res of held) res.destroy();
  });

  it('records a sync run as running while it executes and answers only once its outcome is stored', async () => {
    const held = target.hold('/hold-recorded');
    await api.call('POST', '/v1/tools', {
      body: { id: 'held-sync', steps: [{ id: 'wait', config: { url: `${target.url}/hold-recorded` } }] },
    });
    const running = api.call<Run>('POST', '/v1/tools/held-sync/run', { body: {} });
    await expect.poll(() => held.length).toBe(1);
    const listed = async () =>
      (await api.call<List<Run>>('GET', '/v1/runs?toolId=held-sync&status=running')).body.data.length;
    await expect.poll(listed).toBe(1);
    held[0]?.end('{"done":true}');
    const response = await running;
    expect(response.body).toMatchObject({ status: 'success', data: { done: true } });
    const stored = await api.call<Run>('GET', `/v1/runs/${response.body.runId}`);
    expect(stored.body.status).toBe('success');
    expect(stored.body.metadata.completedAt).toBe(response.body.metadata.completedAt);
  });

  it('stores every one of many concurrent sync runs with its outcome', async () => {
    const responses = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        api.call<Run>('POST', '/v1/tools/list-users/run', { body: { inputs: { i } } }),
      ),
    );
    const stored = await Promise.all(responses.map((r) => api.call<Run>('GET', `/v1/runs/${r.body.runId}`)));
    expect(responses.map((r) => r.body.status)).toEqual(Array(24).fill('success'));
    expect(stored.map((r) => r.body.status)).toEqual(Array(24).fill('success'));
  });

  it('gives runs ids that sort in the order they started (UUIDv7, the start time in their first 48 bits)', async () => {
    const before = Date.now();
    const first = await api.call<Run>('POST', '/v1/tools/list-users/run', { body: { inputs: {} } });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await api.call<Run>('POST', '/v1/tools/list-users/run', {
      body: { inputs: {}, options: { async: true } },
    });
    const ids = [first.body.runId, second.body.runId];
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(ids[0]! < ids[1]!).toBe(true);
    const startedMs = Number.parseInt(ids[0]!.replace('-', '').slice(0, 12), 16);
    expect(startedMs).toBeGreaterThanOrEqual(before);
    expect(startedMs).toBeLessThanOrEqual(Date.parse(first.body.metadata.startedAt) + 1);
  });

  it('cancels an asynchronous run', async () => {
    const held = target.hold('/hold-async');
    await api.call('POST', '/v1/tools', {
      body: { id: 'slow-async', steps: [{ id: 'wait', config: { url: `${target.url}/hold-async` } }] },
    });
    const accepted = await api.call<Run>('POST', '/v1/tools/slow-async/run', {
      body: { options: { async: true } },
    });
    await expect.poll(() => held.length, { timeout: 10_000 }).toBe(1);
    expect((await api.call<Run>('POST', `/v1/runs/${accepted.body.runId}/cancel`)).body.status).toBe(
      'aborted',
    );
    const final = await waitForRun<Run>(api, accepted.body.runId);
    expect(final.status).toBe('aborted');
    for (const res of held) res.destroy();
  });

  it('lists runs newest first with every filter and the envelope', async () => {
    const all = await api.call<List<Run>>('GET', '/v1/runs?limit=2');
    // A few runs: the count is exact (it stops only past 10 000).
    expect(all.body).toMatchObject({ page: 1, limit: 2, hasMore: true, totalExact: true });
    expect(all.body.total).toBeGreaterThan(2);
    const starts = all.body.data.map((r) => r.metadata.startedAt);
    expect([...starts].sort().reverse()).toEqual(starts);
    const byTool = await api.call<List<Run>>('GET', '/v1/runs?toolId=list-users&status=success');
    expect(byTool.body.data.every((r) => r.toolId === 'list-users' && r.status === 'success')).toBe(true);
    const bySystem = await api.call<List<Run>>('GET', '/v1/runs?systemId=crm');
    expect(bySystem.body.total).toBe(
      byTool.body.total +
        (await api.call<List<Run>>('GET', '/v1/runs?systemId=crm&status=aborted')).body.total,
    );
    const bySource = await api.call<List<Run>>('GET', '/v1/runs?requestSources=api,cli');
    expect(bySource.body.data.every((r) => r.requestSource === 'api' || r.requestSource === 'cli')).toBe(
      true,
    );
    const first = all.body.data[0] as Run;
    const byUser = await api.call<List<Run>>(
      `GET`,
      `/v1/runs?userId=${encodeURIComponent(first.userId ?? '')}`,
    );
    expect(byUser.body.total).toBe(all.body.total);
    // Above the maximum the limit is clamped, as for tools and systems (superglue's CLI asks for 1000).
    const clamped = await api.call<List<Run>>('GET', '/v1/runs?limit=100000');
    expect(clamped.status).toBe(200);
    expect(clamped.body.limit).toBe(100);
    expect((await api.call('GET', '/v1/runs?limit=0')).status).toBe(400);
    expect((await api.call('GET', '/v1/runs?status=done')).status).toBe(400);
  });

  it('serves file artifacts through presigned URLs that need no key and refuse tampering', async () => {
    await api.call('POST', '/v1/tools', {
      body: {
        id: 'report',
        steps: [{ id: 'a', config: { type: 'transform', transformCode: '() => 1' } }],
        outputTransform: '() => ({ ok: true, __files__: { "report.csv": "a,b\\n1,2\\n" } })',
      },
    });
    const run = await api.call<Run>('POST', '/v1/tools/report/run', { body: {} });
    const got = await api.call<Run>('GET', `/v1/runs/${run.body.runId}`);
    const url = got.body.fileArtifacts?.[0]?.downloadUrl as string;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/files\//);
    const download = await fetch(url);
    expect(download.status).toBe(200);
    expect(await download.text()).toBe('a,b\n1,2\n');
    const tampered = await fetch(url.replace(/signature=[^&]+/, 'signature=AAAA'));
    expect(tampered.status).toBe(403);
    expect(await tampered.json()).toEqual(catalogError('KG_ERR_DOWNLOAD_LINK_INVALID', expect.any(String)));
    const info = await api.call<{ downloadUrl: string; expiresIn: number }>(
      'GET',
      `/v1/runs/${run.body.runId}/files/report.csv/download`,
    );
    expect(info.body.expiresIn).toBe(3600);
    const listed = await api.call<{ fileArtifacts: unknown[] }>('GET', `/v1/runs/${run.body.runId}/files`);
    expect(listed.body.fileArtifacts).toHaveLength(1);
  });
});

describe('authentication', () => {
  it('answers 401 with WWW-Authenticate without a key or with a bad one, and accepts ?token=', async () => {
    const missing = await api.call('GET', '/v1/tools', { key: null });
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await api.call('GET', '/v1/tools', { key: 'kg_not-a-real-key-000000000000' })).status).toBe(401);
    const viaQuery = await api.call(
      'GET',
      `/v1/tools?token=${encodeURIComponent('kg_test-admin-key-0123456789abcdefghijklmnop')}`,
      { key: null },
    );
    expect(viaQuery.status).toBe(200);
  });

  it('limits a restricted key to its tools and their runs', async () => {
    const created = await api.call<{ key: string }>('POST', '/v1/api-keys', {
      body: { name: 'hooks', toolIds: ['list-users'] },
    });
    expect(created.status).toBe(201);
    const key = created.body.key;
    expect((await api.call('POST', '/v1/tools/list-users/run', { key, body: {} })).status).toBe(200);
    // Another tool's run answers like a tool that does not exist.
    expect((await api.call('POST', '/v1/tools/report/run', { key, body: {} })).status).toBe(404);
    const runs = await api.call<List<Run>>('GET', '/v1/runs', { key });
    expect(runs.body.data.every((r) => r.toolId === 'list-users')).toBe(true);
    expect(
      (
        await api.call('POST', '/v1/tools', {
          key,
          body: { id: 'x', steps: [{ id: 'a', config: { url: 'https://x.test' } }] },
        })
      ).status,
    ).toBe(403);
    expect((await api.call('GET', '/v1/api-keys', { key })).status).toBe(403);
  });

  it('never returns a credential in any response of this suite', () => {
    const everything = api.bodies.join('\n');
    expect(everything).not.toContain(STORED_SECRET);
    expect(everything).not.toContain(RUNTIME_SECRET);
  });
});
