/**
 * Trying a tool before saving it: `POST /v1/tools/run` runs a definition that is not saved (recorded only
 * with `createRun=true`), `POST /v1/tools/step/run` runs one step with a payload and earlier results. Same
 * auth, checks, limits, sandbox and egress rules as saved tools; keys limited to tools may not use them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { Run } from '../../../contract/api/run.ts';
import { TEST_ADMIN_KEY, useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const TOKEN = 'draft-bearer-token-0a7d93c1';

const target = useHttpTarget();
const api = useTestApi({ KUBEGLUE_SANDBOX_TIMEOUT_MS: '300' });

async function eventually(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const transformTool = (id: string, code: string) => ({
  id,
  steps: [{ id: 'calc', config: { type: 'transform', transformCode: code } }],
});

beforeAll(async () => {
  target.route('GET', '/orders', (req) => ({
    body: { orders: [{ id: 1 }, { id: 2 }], auth: req.headers.authorization ?? null },
  }));
  await api.call('POST', '/v1/systems', {
    body: { id: 'shop', url: target.url, authType: 'bearer', credentials: { bearerToken: TOKEN } },
  });
});

describe('POST /v1/tools/run (an unsaved definition)', () => {
  it('runs it without storing anything by default', async () => {
    const res = await api.call<Run>('POST', '/v1/tools/run', {
      body: {
        tool: {
          id: 'orders-draft',
          steps: [{ id: 'orders', config: { url: '/orders', systemId: 'shop' } }],
          outputTransform:
            '(s) => ({ count: s.orders.data.orders.length, authed: s.orders.data.auth !== null })',
        },
        payload: { region: 'eu' },
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'success',
      toolId: 'orders-draft',
      data: { count: 2, authed: true },
    });
    expect(res.body.stepResults?.[0]).toMatchObject({ stepId: 'orders', success: true });
    // Nothing stored: no run record, no tool.
    expect((await api.call('GET', `/v1/runs/${res.body.runId}`)).status).toBe(404);
    expect((await api.call('GET', '/v1/tools/orders-draft')).status).toBe(404);
    expect(JSON.stringify(res.body)).not.toContain(TOKEN);
  });

  it('records the run with createRun=true, files included', async () => {
    const res = await api.call<Run>('POST', '/v1/tools/run?createRun=true', {
      body: {
        tool: {
          ...transformTool('report-draft', '(s) => s.n'),
          outputTransform: '(s) => ({ rows: s.calc.data, __files__: { "r.txt": "n=" + s.n } })',
        },
        inputs: { n: 3 },
        includeStepResultData: false,
      },
    });
    expect(res.body).toMatchObject({ status: 'success', data: { rows: 3 } });
    expect(res.body.stepResults?.[0]).not.toHaveProperty('data');
    const stored = await api.call<Run>('GET', `/v1/runs/${res.body.runId}`);
    expect(stored.body).toMatchObject({ status: 'success', toolId: 'report-draft' });
    const file = stored.body.fileArtifacts?.[0];
    expect(await (await fetch(file?.downloadUrl ?? '')).text()).toBe('n=3');
    const listed = await api.call<{ data: Run[] }>('GET', '/v1/runs?toolId=report-draft');
    expect(listed.body.data.map((run) => run.runId)).toEqual([res.body.runId]);
  });

  it('an unrecorded run has no files to download and cannot be asynchronous', async () => {
    const res = await api.call<Run>('POST', '/v1/tools/run', {
      body: {
        tool: {
          ...transformTool('files', '() => 1'),
          outputTransform: '() => ({ __files__: { "a.txt": "a" } })',
        },
      },
    });
    expect(res.body.fileArtifacts).toEqual([expect.not.objectContaining({ downloadUrl: expect.anything() })]);
    const async = await api.call<ErrorBody>('POST', '/v1/tools/run', {
      body: { tool: transformTool('a', '() => 1'), options: { async: true } },
    });
    expect(async.status).toBe(400);
    expect(async.body.error.message).toMatch(/createRun=true/);
    // With createRun it is an ordinary async run.
    const queued = await api.call<Run>('POST', '/v1/tools/run?createRun=true', {
      body: { tool: transformTool('a', '() => 1'), options: { async: true } },
    });
    expect(queued.status).toBe(202);
    expect((await waitForRun<Run>(api, queued.body.runId)).status).toBe('success');
  });

  it('applies the save-time checks: schema (400) and code, systems, SQL templates (422)', async () => {
    const schema = await api.call<ErrorBody>('POST', '/v1/tools/run', {
      body: { tool: { id: 'x', steps: [{ id: 'a', config: { type: 'transform' } }] } },
    });
    expect(schema.status).toBe(400);
    expect(schema.body.error.message).toMatch(/tool\.steps\[0\]/);
    const code = await api.call<ErrorBody>('POST', '/v1/tools/run', {
      body: { tool: transformTool('x', '(s) => {') },
    });
    expect(code).toMatchObject({ status: 422, body: { error: { code: 'KG_ERR_TOOL_INVALID' } } });
    const system = await api.call<ErrorBody>('POST', '/v1/tools/run', {
      body: { tool: { id: 'x', steps: [{ id: 'a', config: { url: '/x', systemId: 'nope' } }] } },
    });
    expect(system.status).toBe(422);
    expect(system.body.error.message).toContain("system 'nope' does not exist");
  });

  it('runs with the sandbox and egress rules of saved tools', async () => {
    const loop = await api.call<Run>('POST', '/v1/tools/run', {
      body: { tool: transformTool('spin', '() => { for (;;) {} }') },
    });
    expect(loop.body.status).toBe('failed');
    expect(loop.body.error).toMatch(/time/i);
    const metadata = await api.call<Run>('POST', '/v1/tools/run', {
      body: { tool: { id: 'meta', steps: [{ id: 'a', config: { url: 'http://169.254.169.254/latest/' } }] } },
    });
    expect(metadata.body.status).toBe('failed');
    expect(metadata.body.error).toContain('cloud metadata address');
  });

  it('is for keys not limited to tools: a limited key gets 403', async () => {
    const limited = await api.call<{ key: string }>('POST', '/v1/api-keys', {
      body: { name: 'one tool', toolIds: ['orders-draft'] },
    });
    for (const [path, body] of [
      ['/v1/tools/run', { tool: transformTool('orders-draft', '() => 1') }],
      ['/v1/tools/step/run', { step: { id: 'a', config: { type: 'transform', transformCode: '() => 1' } } }],
    ] as const) {
      const res = await api.call<ErrorBody>('POST', path, { body, key: limited.body.key });
      expect(res).toMatchObject({ status: 403, body: { error: { code: 'KG_ERR_KEY_RESTRICTED' } } });
    }
  });

  it('stops an unrecorded run whose client went away (nobody could see its outcome)', async () => {
    let closedAfterMs: number | undefined;
    target.route('GET', '/held', (_req, res) => {
      const since = Date.now();
      res.on('close', () => {
        closedAfterMs = Date.now() - since;
      });
      setTimeout(() => res.end('[]'), 5_000).unref();
      return undefined;
    });
    const controller = new AbortController();
    const request = fetch(`${api.url}/v1/tools/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        tool: { id: 'held', steps: [{ id: 'wait', config: { url: '/held', systemId: 'shop' } }] },
      }),
      signal: controller.signal,
    }).catch(() => undefined);
    await eventually(() => target.requests.some((r) => r.path === '/held'));
    controller.abort();
    await request;
    // The engine aborted the call in flight: the target's connection closed long before its answer.
    await eventually(() => closedAfterMs !== undefined);
    expect(closedAfterMs).toBeLessThan(4_000);
  });
});

describe('POST /v1/tools/step/run (one step)', () => {
  it('runs the step with the payload and earlier step results in sourceData', async () => {
    const res = await api.call('POST', '/v1/tools/step/run', {
      body: {
        step: {
          id: 'total',
          config: { type: 'transform', transformCode: '(s) => s.orders.data.orders.length * s.factor' },
        },
        payload: { factor: 10 },
        previousResults: { orders: { data: { orders: [1, 2, 3] } } },
      },
    });
    expect(res).toMatchObject({ status: 200, body: { stepId: 'total', success: true, data: 30 } });
  });

  it('calls a system with its credentials (never shown), and records the run with createRun', async () => {
    const res = await api.call<{ runId: string; data: { auth: string } }>('POST', '/v1/tools/step/run', {
      body: {
        step: { id: 'orders', config: { url: '/orders', systemId: 'shop' } },
        systemIds: ['shop'],
        createRun: true,
        parentToolId: 'orders-tool',
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.auth).toBe('Bearer <<shop_bearerToken>>');
    const stored = await api.call<Run>('GET', `/v1/runs/${res.body.runId}`);
    expect(stored.body).toMatchObject({ toolId: 'orders-tool', status: 'success' });
  });

  it('reports a failing step as success false with its error', async () => {
    const res = await api.call('POST', '/v1/tools/step/run', {
      body: {
        step: { id: 'boom', config: { type: 'transform', transformCode: '() => { throw new Error("no") }' } },
      },
    });
    expect(res).toMatchObject({
      status: 200,
      body: { stepId: 'boom', success: false, error: expect.stringContaining('no') },
    });
  });

  it("refuses systemIds the step does not use, and a stepId other than the step's", async () => {
    const step = { id: 'orders', config: { url: '/orders', systemId: 'shop' } };
    const wrongSystems = await api.call<ErrorBody>('POST', '/v1/tools/step/run', {
      body: { step, systemIds: ['crm'] },
    });
    expect(wrongSystems.status).toBe(400);
    expect(wrongSystems.body.error.message).toContain('systemIds');
    const wrongId = await api.call<ErrorBody>('POST', '/v1/tools/step/run', {
      body: { step, stepId: 'other' },
    });
    expect(wrongId.body.error.message).toContain('stepId');
  });
});

describe('the reserved ids run and step', () => {
  it('are refused at creation with a message saying why', async () => {
    for (const id of ['run', 'step']) {
      const res = await api.call<ErrorBody>('POST', '/v1/tools', { body: transformTool(id, '() => 1') });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toContain(`'${id}' is reserved`);
    }
    // Other ids with spaces are fine.
    expect((await api.call('POST', '/v1/tools', { body: transformTool('run step', '() => 1') })).status).toBe(
      201,
    );
  });
});
