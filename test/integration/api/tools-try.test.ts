/**
 * Trying a definition up to a step (`POST /v1/tools/run` with untilStep): the steps after it never run, every
 * step's data comes back with the sourceData the next step would receive, credentials never appear, and
 * nothing is stored unless createRun asks for it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { Run } from '../../../contract/api/run.ts';
import { callOk, useTestApi } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

type RunList = { data: Array<{ runId: string }>; total: number };

const target = useHttpTarget();
const api = useTestApi();

/** The system's credential: the target echoes the Authorization header it receives. */
const TOKEN = 'try-secret-token-5c1f';

/** user (GET /user, echoes the auth header) → orders (GET /orders?user=…) → notify (POST /notify). */
function draft() {
  return {
    id: 'three-steps',
    steps: [
      { id: 'user', config: { systemId: 'crm', url: '/user' } },
      {
        id: 'orders',
        config: { systemId: 'crm', url: '/orders', queryParams: { user: '<<(s) => s.user.data.id>>' } },
      },
      {
        id: 'notify',
        config: {
          systemId: 'crm',
          url: '/notify',
          method: 'POST',
          body: { n: '<<(s) => s.orders.data.length>>' },
        },
      },
    ],
    outputTransform: '(s) => s.notify.data',
  };
}

function tryRun(body: Record<string, unknown>, query = '') {
  return api.call<Run>('POST', `/v1/tools/run${query}`, { body });
}

async function runIds(): Promise<string[]> {
  const list = await callOk<RunList>(api, 'GET', '/v1/runs?limit=100');
  return list.data.map((run) => run.runId);
}

beforeAll(async () => {
  target.route('GET', '/user', (req) => ({ body: { id: 7, name: 'Ada', auth: req.headers.authorization } }));
  target.route('GET', '/orders', (req) => ({
    body: [{ order: 1, user: Object.fromEntries(req.query).user }, { order: 2 }],
  }));
  target.route('POST', '/notify', { body: { sent: true } });
  target.route('GET', '/pages', (req) => {
    const page = Number(Object.fromEntries(req.query).page);
    return { body: page <= 2 ? [page * 10, page * 10 + 1] : [] };
  });
  target.route('GET', '/item', (req) => ({ body: { item: Object.fromEntries(req.query).n } }));
  await callOk(api, 'POST', '/v1/systems', {
    id: 'crm',
    url: target.url,
    authType: 'bearer',
    credentials: { bearerToken: TOKEN },
  });
});

describe('POST /v1/tools/run with untilStep', () => {
  it('runs the steps up to and including it, answers their data and the next step’s sourceData, and stores nothing', async () => {
    const before = await runIds();
    const notifyCalls = target.count('/notify');

    const answer = await tryRun({ tool: draft(), inputs: { region: 'eu' }, untilStep: 'orders' });

    expect(answer.status).toBe(200);
    expect(target.count('/notify')).toBe(notifyCalls);
    const run = answer.body;
    expect(run.status).toBe('success');
    expect(run.stepResults?.map((s) => [s.stepId, s.success])).toEqual([
      ['user', true],
      ['orders', true],
    ]);
    expect(run.stepResults?.[1]?.data).toEqual([{ order: 1, user: '7' }, { order: 2 }]);
    // No output transform: the run's data is the last step's.
    expect(run.data).toEqual([{ order: 1, user: '7' }, { order: 2 }]);
    expect(run.until).toEqual({
      stepId: 'orders',
      nextStepId: 'notify',
      sourceDataKeys: ['region', 'user', 'orders'],
      sourceData: {
        region: 'eu',
        user: {
          currentItem: {},
          data: { id: 7, name: 'Ada', auth: 'Bearer <<crm_bearerToken>>' },
          success: true,
        },
        orders: { currentItem: {}, data: [{ order: 1, user: '7' }, { order: 2 }], success: true },
      },
    });
    // The system's credential reached the target, and appears nowhere in the answer.
    expect(target.requests.find((r) => r.path === '/user')?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(JSON.stringify(run)).not.toContain(TOKEN);
    expect(await runIds()).toEqual(before);
  });

  it('stores the try as a run when createRun=true asks for it', async () => {
    const answer = await tryRun({ tool: draft(), untilStep: 'user' }, '?createRun=true');
    expect(answer.body).toMatchObject({ status: 'success', until: { stepId: 'user', nextStepId: 'orders' } });
    const stored = await callOk<Run>(api, 'GET', `/v1/runs/${answer.body.runId}`);
    expect(stored).toMatchObject({ status: 'success', toolId: 'three-steps' });
    expect(stored.until).toBeUndefined();
    expect(await runIds()).toContain(answer.body.runId);
  });

  it('on the last step answers sourceData without a next step, and skips the output transform', async () => {
    const answer = await tryRun({ tool: draft(), untilStep: 'notify' });
    expect(answer.body.data).toEqual({ sent: true });
    expect(answer.body.until).toMatchObject({
      stepId: 'notify',
      sourceDataKeys: ['user', 'orders', 'notify'],
    });
    expect(answer.body.until?.nextStepId).toBeUndefined();
  });

  it('refuses an unknown step with the ids of the definition’s steps', async () => {
    const answer = await api.call<ErrorBody>('POST', '/v1/tools/run', {
      body: { tool: draft(), untilStep: 'order' },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('KG_ERR_VALIDATION');
    expect(answer.body.error.message).toContain("no step 'order' in the definition");
    expect(answer.body.error.message).toContain("'user', 'orders', 'notify'");
  });

  it('refuses an asynchronous try', async () => {
    const answer = await api.call<ErrorBody>('POST', '/v1/tools/run?createRun=true', {
      body: { tool: draft(), untilStep: 'user', options: { async: true } },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toContain('untilStep');
  });

  it('answers the keys without the sourceData when includeStepResultData is false', async () => {
    const answer = await tryRun({ tool: draft(), untilStep: 'user', includeStepResultData: false });
    expect(answer.body.until).toEqual({ stepId: 'user', nextStepId: 'orders', sourceDataKeys: ['user'] });
  });

  it('stops after a loop step once every item ran, and after a paginated step once every page was fetched', async () => {
    const itemCalls = target.count('/item');
    const notifyCalls = target.count('/notify');
    const tool = {
      id: 'loop-and-pages',
      steps: [
        {
          id: 'pages',
          config: {
            systemId: 'crm',
            url: '/pages',
            queryParams: { page: '<<page>>' },
            pagination: { type: 'pageBased', pageSize: 2 },
          },
        },
        {
          id: 'each',
          dataSelector: '(s) => s.pages.data',
          config: { systemId: 'crm', url: '/item', queryParams: { n: '<<currentItem>>' } },
        },
        { id: 'notify', config: { systemId: 'crm', url: '/notify', method: 'POST' } },
      ],
    };

    const pagesOnly = await tryRun({ tool, untilStep: 'pages' });
    expect(pagesOnly.body.stepResults?.[0]).toMatchObject({
      data: [10, 11, 20, 21],
      pagination: { pages: 3 },
    });
    expect(pagesOnly.body.until).toMatchObject({ stepId: 'pages', nextStepId: 'each' });
    expect(target.count('/item')).toBe(itemCalls);

    const looped = await tryRun({ tool, untilStep: 'each' });
    expect(looped.body.stepResults?.[1]).toMatchObject({ loop: { items: 4, failed: 0 } });
    expect(target.count('/item')).toBe(itemCalls + 4);
    expect(target.count('/notify')).toBe(notifyCalls);
    const each = looped.body.until?.sourceData?.each as Array<{ currentItem: number; data: unknown }>;
    expect(each.map((e) => [e.currentItem, e.data])).toEqual([
      [10, { item: '10' }],
      [11, { item: '11' }],
      [20, { item: '20' }],
      [21, { item: '21' }],
    ]);
  });

  it('fails as a run does when a step before it fails, without sourceData', async () => {
    const tool = draft();
    tool.steps[0] = { id: 'user', config: { systemId: 'crm', url: '/missing' } };
    const answer = await tryRun({ tool, untilStep: 'orders' });
    expect(answer.body.status).toBe('failed');
    expect(answer.body.stepResults?.map((s) => s.stepId)).toEqual(['user']);
    expect(answer.body.until).toBeUndefined();
  });
});
