/**
 * The /v1 schedule routes in the embedded deployment: create, read, list, change and delete, with what
 * they refuse (an expression that cannot run, an unknown time zone, an unknown or archived tool, inputs
 * the tool's inputSchema refuses), the scopes they need, a key limited to tools seeing and managing only
 * their schedules, the OpenAPI document, and the same schedules as ToolSchedule resources.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ToolSchedule } from '../../../contract/api/schedule.ts';
import { createEmbeddedKubeglueResources } from '../../../kube/resources/index.ts';
import { useTestApi } from '../../support/embedded.ts';
import { createEchoTool, getSchedule } from '../../support/schedules.ts';

const api = useTestApi();
let limitedKey: string;
let readOnlyKey: string;

beforeAll(async () => {
  await createEchoTool(api, 'report');
  await createEchoTool(api, 'other');
  await api.call('POST', '/v1/tools', {
    body: {
      id: 'typed',
      inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      steps: [{ id: 'echo', config: { type: 'transform', transformCode: '(s) => s.n' } }],
    },
  });
  const limited = await api.call<{ key: string }>('POST', '/v1/api-keys', {
    body: {
      name: 'report-only',
      scopes: ['tools:read', 'tools:write', 'runs:read', 'runs:execute'],
      toolIds: ['report'],
    },
  });
  limitedKey = limited.body.key;
  const readOnly = await api.call<{ key: string }>('POST', '/v1/api-keys', {
    body: { name: 'reader', scopes: ['tools:read', 'runs:read'] },
  });
  readOnlyKey = readOnly.body.key;
});

describe('the schedule routes', () => {
  it('create, read, change and delete a schedule', async () => {
    const body = {
      cronExpression: '0 9 * * MON-FRI',
      timezone: 'Europe/Berlin',
      enabled: true,
      payload: { n: 1 },
      options: { timeout: 60_000, retries: 2, webhookUrl: 'tool:other' },
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: 300,
    };
    const created = await api.call<ToolSchedule>('POST', '/v1/tools/report/schedules', { body });
    expect(created.status).toBe(201);
    const schedule = created.body;
    // What was sent comes back, with the server's fields.
    expect(schedule).toMatchObject({ ...body, toolId: 'report', status: 'active', activeRunIds: [] });
    expect(schedule.id).toMatch(/^[0-9a-f-]{36}$/);
    // 09:00 in Berlin on a weekday, after now.
    const next = new Date(schedule.nextRunAt as string);
    expect(next.getTime()).toBeGreaterThan(Date.now());
    expect(
      next.toLocaleString('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit' }),
    ).toBe('09:00');
    expect([0, 6]).not.toContain(next.getUTCDay());
    for (const field of ['createdAt', 'updatedAt'] as const)
      expect(Date.parse(schedule[field])).not.toBeNaN();

    const got = await api.call<ToolSchedule>('GET', `/v1/tools/report/schedules/${schedule.id}`);
    expect(got.body).toMatchObject({ id: schedule.id, cronExpression: '0 9 * * MON-FRI' });

    const changed = await api.call<ToolSchedule>('PUT', `/v1/tools/report/schedules/${schedule.id}`, {
      body: { cronExpression: '@hourly', enabled: false, startingDeadlineSeconds: null },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      cronExpression: '@hourly',
      timezone: 'Europe/Berlin',
      enabled: false,
      status: 'disabled',
      statusReason: 'Suspended',
      payload: { n: 1 },
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: null,
    });

    // The same object kubectl sees.
    const resources = createEmbeddedKubeglueResources(api.embedded.store.resources, 'default');
    const resource = await resources.toolSchedules.get(schedule.id);
    expect(resource?.spec).toMatchObject({
      toolId: 'report',
      schedule: '@hourly',
      timeZone: 'Europe/Berlin',
      suspend: true,
      concurrencyPolicy: 'Forbid',
      inputs: { n: 1 },
    });
    expect(resource?.spec.startingDeadlineSeconds).toBeUndefined();

    const deleted = await api.call('DELETE', `/v1/tools/report/schedules/${schedule.id}`);
    expect(deleted.body).toEqual({ success: true });
    const gone = await api.call<{ error: { code: string } }>(
      'GET',
      `/v1/tools/report/schedules/${schedule.id}`,
    );
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('KG_ERR_SCHEDULE_NOT_FOUND');
  });

  it('refuses what could not run, saying why', async () => {
    const post = (toolId: string, body: unknown) =>
      api.call<{ error: { code: string; message: string } }>('POST', `/v1/tools/${toolId}/schedules`, {
        body,
      });
    const cases: [string, unknown, number, string, RegExp][] = [
      ['report', { cronExpression: '61 * * * *' }, 400, 'KG_ERR_SCHEDULE_INVALID', /minute/],
      ['report', { cronExpression: '0 0 31 2 *' }, 400, 'KG_ERR_SCHEDULE_INVALID', /never matches/],
      ['report', { cronExpression: '* * * * * *' }, 400, 'KG_ERR_VALIDATION', /five cron fields/],
      [
        'report',
        { cronExpression: '* * * * *', timezone: 'Mars/Base' },
        400,
        'KG_ERR_VALIDATION',
        /IANA time zone/,
      ],
      [
        'report',
        { cronExpression: '* * * * *', options: { async: false } },
        400,
        'KG_ERR_VALIDATION',
        /async/,
      ],
      ['nowhere', { cronExpression: '* * * * *' }, 404, 'KG_ERR_TOOL_NOT_FOUND', /nowhere/],
      ['typed', { cronExpression: '* * * * *', payload: { n: 'x' } }, 400, 'KG_ERR_INPUTS_INVALID', /n/],
    ];
    for (const [toolId, body, status, code, message] of cases) {
      const response = await post(toolId, body);
      expect([response.status, response.body.error.code], JSON.stringify(body)).toEqual([status, code]);
      expect(response.body.error.message).toMatch(message);
    }
    await api.call('POST', '/v1/tools', {
      body: {
        id: 'old',
        archived: true,
        steps: [{ id: 'a', config: { type: 'transform', transformCode: '(s) => s' } }],
      },
    });
    const archived = await post('old', { cronExpression: '* * * * *' });
    expect([archived.status, archived.body.error.code]).toEqual([400, 'KG_ERR_TOOL_ARCHIVED']);
  });

  it('previews when an expression would run in a time zone, as the schedule created with it then runs', async () => {
    const query = new URLSearchParams({ cronExpression: ' 0 9  * * MON-FRI', timezone: 'Europe/Berlin' });
    const preview = await api.call<{ cronExpression: string; timezone: string; nextRuns: string[] }>(
      'GET',
      `/v1/schedules/next-runs?${query}`,
      { key: readOnlyKey },
    );
    expect(preview.status, preview.text).toBe(200);
    expect(preview.body).toMatchObject({ cronExpression: '0 9 * * MON-FRI', timezone: 'Europe/Berlin' });
    const ticks = preview.body.nextRuns.map((tick) => new Date(tick));
    expect(ticks).toHaveLength(5);
    expect(ticks[0]?.getTime()).toBeGreaterThan(Date.now());
    for (const [i, tick] of ticks.entries()) {
      const berlin = tick.toLocaleString('en-GB', {
        timeZone: 'Europe/Berlin',
        weekday: 'short',
        hour: '2-digit',
        minute: '2-digit',
      });
      expect(berlin).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:00$/);
      if (i > 0) expect(tick.getTime()).toBeGreaterThan(ticks[i - 1]?.getTime() ?? 0);
    }
    const created = await api.call<ToolSchedule>('POST', '/v1/tools/report/schedules', {
      body: { cronExpression: '0 9 * * MON-FRI', timezone: 'Europe/Berlin' },
    });
    expect(created.body.nextRunAt).toBe(preview.body.nextRuns[0]);
    await api.call('DELETE', `/v1/tools/report/schedules/${created.body.id}`);

    // UTC by default; at most 20 ticks.
    const hourly = await api.call<{ timezone: string; nextRuns: string[] }>(
      'GET',
      '/v1/schedules/next-runs?cronExpression=@hourly&count=100',
    );
    expect(hourly.body.timezone).toBe('UTC');
    expect(hourly.body.nextRuns).toHaveLength(20);
    expect(hourly.body.nextRuns.every((tick) => tick.endsWith(':00:00.000Z'))).toBe(true);

    // What a schedule would refuse, it refuses the same way.
    const refused: [Record<string, string>, string, RegExp][] = [
      [{ cronExpression: '61 * * * *' }, 'KG_ERR_SCHEDULE_INVALID', /minute/],
      [{ cronExpression: '0 0 31 2 *' }, 'KG_ERR_SCHEDULE_INVALID', /never matches/],
      [{ cronExpression: '* * * * *', timezone: 'Mars/Base' }, 'KG_ERR_VALIDATION', /IANA time zone/],
      [{}, 'KG_ERR_VALIDATION', /cronExpression/],
    ];
    for (const [params, code, message] of refused) {
      const answer = await api.call<{ error: { code: string; message: string } }>(
        'GET',
        `/v1/schedules/next-runs?${new URLSearchParams(params)}`,
      );
      expect([answer.status, answer.body.error.code], JSON.stringify(params)).toEqual([400, code]);
      expect(answer.body.error.message).toMatch(message);
    }
  });

  it('needs tools:read to read and tools:write with runs:execute to write', async () => {
    const read = await api.call('GET', '/v1/schedules', { key: readOnlyKey });
    expect(read.status).toBe(200);
    const write = await api.call<{ error: { code: string } }>('POST', '/v1/tools/report/schedules', {
      key: readOnlyKey,
      body: { cronExpression: '* * * * *' },
    });
    expect([write.status, write.body.error.code]).toEqual([403, 'KG_ERR_SCOPE_REQUIRED']);
  });

  it('a key limited to tools sees and manages only their schedules', async () => {
    const mine = await api.call<ToolSchedule>('POST', '/v1/tools/report/schedules', {
      key: limitedKey,
      body: { cronExpression: '*/10 * * * *' },
    });
    expect(mine.status).toBe(201);
    const theirs = await api.call<ToolSchedule>('POST', '/v1/tools/other/schedules', {
      body: { cronExpression: '*/10 * * * *' },
    });
    const listed = await api.call<{ data: ToolSchedule[]; total: number }>('GET', '/v1/schedules', {
      key: limitedKey,
    });
    expect(listed.body.data.map((s) => s.toolId)).toEqual(['report']);
    expect(listed.body.total).toBe(1);
    const all = await api.call<{ data: ToolSchedule[] }>('GET', '/v1/schedules');
    expect(all.body.data.map((s) => s.id)).toEqual(expect.arrayContaining([mine.body.id, theirs.body.id]));

    for (const [method, path] of [
      ['GET', `/v1/tools/other/schedules`],
      ['GET', `/v1/tools/other/schedules/${theirs.body.id}`],
      ['PUT', `/v1/tools/other/schedules/${theirs.body.id}`],
      ['DELETE', `/v1/tools/other/schedules/${theirs.body.id}`],
      ['POST', `/v1/tools/other/schedules`],
    ] as const) {
      const response = await api.call<{ error: { code: string } }>(method, path, {
        key: limitedKey,
        ...(method === 'PUT' || method === 'POST' ? { body: { cronExpression: '* * * * *' } } : {}),
      });
      expect([response.status, response.body.error.code], `${method} ${path}`).toEqual([
        404,
        'KG_ERR_TOOL_NOT_FOUND',
      ]);
    }
    // Its schedule may not chain to a tool it cannot use.
    const chain = await api.call<{ error: { code: string } }>(
      'PUT',
      `/v1/tools/report/schedules/${mine.body.id}`,
      {
        key: limitedKey,
        body: { options: { webhookUrl: 'tool:other' } },
      },
    );
    expect(chain.body.error.code).toBe('KG_ERR_CHAIN_TARGET_FORBIDDEN');
    // A schedule is found only under its own tool.
    const wrongTool = await api.call('GET', `/v1/tools/report/schedules/${theirs.body.id}`);
    expect(wrongTool.status).toBe(404);
  });

  it('keeps schedule ids per tool: a key limited to a tool neither learns nor reserves the ids of others', async () => {
    const others = await api.call<ToolSchedule>('POST', '/v1/tools/other/schedules', {
      body: { id: 'nightly', cronExpression: '0 2 * * *' },
    });
    expect(others.status).toBe(201);
    // The same id under the key's own tool is created as if the other did not exist: no 409 tells it does.
    const mine = await api.call<ToolSchedule>('POST', '/v1/tools/report/schedules', {
      key: limitedKey,
      body: { id: 'nightly', cronExpression: '0 3 * * *' },
    });
    expect([mine.status, mine.body.id, mine.body.toolId]).toEqual([201, 'nightly', 'report']);
    expect(await getSchedule(api, 'report', 'nightly', limitedKey)).toMatchObject({
      id: 'nightly',
      cronExpression: '0 3 * * *',
    });
    expect(await getSchedule(api, 'other', 'nightly')).toMatchObject({
      id: 'nightly',
      cronExpression: '0 2 * * *',
    });

    // An id the limited key takes first does not block another tool's schedule from having it.
    const first = await api.call('POST', '/v1/tools/report/schedules', {
      key: limitedKey,
      body: { id: 'weekly', cronExpression: '0 4 * * 1' },
    });
    expect(first.status).toBe(201);
    const second = await api.call('POST', '/v1/tools/other/schedules', {
      body: { id: 'weekly', cronExpression: '0 5 * * 1' },
    });
    expect(second.status).toBe(201);

    // Within one tool an id is taken once.
    const again = await api.call<{ error: { code: string } }>('POST', '/v1/tools/report/schedules', {
      key: limitedKey,
      body: { id: 'nightly', cronExpression: '0 6 * * *' },
    });
    expect([again.status, again.body.error.code]).toEqual([409, 'KG_ERR_SCHEDULE_EXISTS']);

    // Each is changed and deleted under its own tool, leaving the other alone.
    const changed = await api.call<ToolSchedule>('PUT', '/v1/tools/other/schedules/nightly', {
      body: { cronExpression: '0 1 * * *' },
    });
    expect(changed.body).toMatchObject({ id: 'nightly', toolId: 'other', cronExpression: '0 1 * * *' });
    expect((await getSchedule(api, 'report', 'nightly', limitedKey)).cronExpression).toBe('0 3 * * *');
    expect((await api.call('DELETE', '/v1/tools/report/schedules/nightly', { key: limitedKey })).status).toBe(
      200,
    );
    expect((await getSchedule(api, 'other', 'nightly')).cronExpression).toBe('0 1 * * *');
    const listed = await api.call<{ data: ToolSchedule[] }>('GET', '/v1/schedules?limit=1000');
    expect(
      listed.body.data
        .filter((s) => s.id === 'weekly')
        .map((s) => s.toolId)
        .sort(),
    ).toEqual(['other', 'report']);

    // kubectl sees one ToolSchedule per tool's schedule, named after the id and a hash, the id in spec.id.
    const resources = createEmbeddedKubeglueResources(api.embedded.store.resources, 'default');
    const weekly = (await resources.toolSchedules.list()).items.filter((r) => r.spec.id === 'weekly');
    expect(weekly.map((r) => r.spec.toolId).sort()).toEqual(['other', 'report']);
    for (const resource of weekly) expect(resource.metadata.name).toMatch(/^weekly-[0-9a-f]{10}$/);
    expect(new Set(weekly.map((r) => r.metadata.name)).size).toBe(2);
  });

  it('refuses an enabled schedule whose payload the inputSchema refuses, also when the body leaves it out', async () => {
    const refused = await api.call<{ error: { code: string; message: string } }>(
      'POST',
      '/v1/tools/typed/schedules',
      { body: { cronExpression: '* * * * *' } },
    );
    expect([refused.status, refused.body.error.code]).toEqual([400, 'KG_ERR_INPUTS_INVALID']);
    expect(refused.body.error.message).toMatch(/\bn\b/);
    // Disabled it may wait without one; enabling it then needs one the tool accepts.
    const disabled = await api.call<ToolSchedule>('POST', '/v1/tools/typed/schedules', {
      body: { cronExpression: '* * * * *', enabled: false },
    });
    expect([disabled.status, disabled.body.status]).toEqual([201, 'disabled']);
    const path = `/v1/tools/typed/schedules/${disabled.body.id}`;
    const enabling = await api.call<{ error: { code: string } }>('PUT', path, { body: { enabled: true } });
    expect([enabling.status, enabling.body.error.code]).toEqual([400, 'KG_ERR_INPUTS_INVALID']);
    const other = await api.call<{ error: { code: string } }>('PUT', path, {
      body: { enabled: true, cronExpression: '@hourly' },
    });
    expect(other.body.error.code).toBe('KG_ERR_INPUTS_INVALID');
    const enabled = await api.call<ToolSchedule>('PUT', path, { body: { enabled: true, payload: { n: 1 } } });
    expect([enabled.status, enabled.body.status, enabled.body.payload]).toEqual([200, 'active', { n: 1 }]);
    // A payload given is checked whether the schedule is enabled or not.
    const bad = await api.call<{ error: { code: string } }>('PUT', path, {
      body: { enabled: false, payload: { n: 'one' } },
    });
    expect(bad.body.error.code).toBe('KG_ERR_INPUTS_INVALID');
    await api.call('DELETE', path);
  });

  it("refuses a payload larger than a schedule's limit, naming the setting", async () => {
    const large = { blob: 'x'.repeat(8 * 1024 * 1024) };
    const refused = await api.call<{ error: { code: string; message: string } }>(
      'POST',
      '/v1/tools/report/schedules',
      { body: { cronExpression: '* * * * *', payload: large } },
    );
    expect([refused.status, refused.body.error.code]).toEqual([413, 'KG_ERR_SCHEDULE_PAYLOAD_TOO_LARGE']);
    expect(refused.body.error.message).toContain('KUBEGLUE_MAX_SCHEDULE_PAYLOAD_BYTES');
    const created = await api.call<ToolSchedule>('POST', '/v1/tools/report/schedules', {
      body: { cronExpression: '* * * * *', payload: { small: true } },
    });
    const changed = await api.call<{ error: { code: string } }>(
      'PUT',
      `/v1/tools/report/schedules/${created.body.id}`,
      { body: { payload: large } },
    );
    expect([changed.status, changed.body.error.code]).toEqual([413, 'KG_ERR_SCHEDULE_PAYLOAD_TOO_LARGE']);
    expect((await getSchedule(api, 'report', created.body.id)).payload).toEqual({ small: true });
    await api.call('DELETE', `/v1/tools/report/schedules/${created.body.id}`);
  });

  it('pages the list as superglue clients read it', async () => {
    for (let i = 0; i < 3; i++) {
      await api.call('POST', '/v1/tools/other/schedules', { body: { cronExpression: `${i} * * * *` } });
    }
    const page = await api.call<{
      data: ToolSchedule[];
      total: number;
      page: number;
      limit: number;
      hasMore: boolean;
    }>('GET', '/v1/tools/other/schedules?limit=2&page=1');
    expect(page.body).toMatchObject({ page: 1, limit: 2, hasMore: true });
    expect(page.body.data).toHaveLength(2);
    const last = await api.call<{ data: ToolSchedule[]; total: number; hasMore: boolean }>(
      'GET',
      `/v1/tools/other/schedules?limit=2&page=${Math.ceil(page.body.total / 2)}`,
    );
    expect(last.body.hasMore).toBe(false);
  });

  it('are in the OpenAPI document', async () => {
    const { body } = await api.call<{ paths: Record<string, Record<string, { operationId: string }>> }>(
      'GET',
      '/v1/openapi.json',
    );
    expect(body.paths['/schedules']?.get?.operationId).toBe('listSchedules');
    expect(body.paths['/schedules/next-runs']?.get?.operationId).toBe('previewScheduleRuns');
    expect(Object.keys(body.paths['/tools/{toolId}/schedules'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(body.paths['/tools/{toolId}/schedules/{scheduleId}'] ?? {}).sort()).toEqual([
      'delete',
      'get',
      'put',
    ]);
  });
});
