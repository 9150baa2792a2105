/**
 * A tool's inputSchema is enforced before a run exists, at every entrance: REST (sync and async), webhooks
 * and chains. A refused run is never stored.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { Run } from '../../../contract/api/run.ts';
import { useTestApi } from '../../support/embedded.ts';

type List<T> = { data: T[]; total: number };

const api = useTestApi();

const userTool = {
  id: 'get-user',
  inputSchema: {
    type: 'object',
    properties: { userId: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
    required: ['userId'],
  },
  steps: [{ id: 'echo', config: { type: 'transform', transformCode: '(s) => ({ id: s.userId })' } }],
};

beforeAll(async () => {
  expect((await api.call('POST', '/v1/tools', { body: userTool })).status).toBe(201);
});

async function runsOf(toolId: string): Promise<Run[]> {
  return (await api.call<List<Run>>('GET', `/v1/runs?toolId=${toolId}`)).body.data;
}

describe('inputSchema', () => {
  it('refuses a run without a required input or with a wrong type, listing every violation by path', async () => {
    const missing = await api.call<ErrorBody>('POST', '/v1/tools/get-user/run', { body: { inputs: {} } });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toEqual({
      code: 'KG_ERR_INPUTS_INVALID',
      message: "Inputs do not match the inputSchema of tool 'get-user': inputs.userId: is required",
      hint: expect.any(String),
      issues: [{ path: ['inputs', 'userId'], message: 'is required' }],
    });

    const wrong = await api.call<ErrorBody>('POST', '/v1/tools/get-user/run', {
      body: { inputs: { userId: 'two', tags: ['a', 3] } },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.message).toContain('inputs.userId: must be integer');
    expect(wrong.body.error.message).toContain('inputs.tags[1]: must be string');
    // Each violation at its field, for a client to show there (the dashboard's run form).
    expect(wrong.body.error.issues).toEqual([
      { path: ['inputs', 'userId'], message: 'must be integer' },
      { path: ['inputs', 'tags', 1], message: 'must be string' },
    ]);

    const asyncRun = await api.call<ErrorBody>('POST', '/v1/tools/get-user/run', {
      body: { inputs: { userId: 'two' }, options: { async: true } },
    });
    expect(asyncRun.status).toBe(400);
    expect(await runsOf('get-user')).toEqual([]);
  });

  it('runs the tool when the inputs match', async () => {
    const ok = await api.call<Run>('POST', '/v1/tools/get-user/run', { body: { inputs: { userId: 2 } } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: 'success', data: { id: 2 } });
  });

  it('applies to webhooks (their own __webhook__ context is not an input)', async () => {
    const strict = {
      ...userTool,
      id: 'strict-hook',
      inputSchema: { ...userTool.inputSchema, additionalProperties: false },
    };
    expect((await api.call('POST', '/v1/tools', { body: strict })).status).toBe(201);
    const refused = await api.call<ErrorBody>('POST', '/v1/hooks/strict-hook', { body: { userId: 'x' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('KG_ERR_INPUTS_INVALID');
    const accepted = await api.call<{ status: string }>('POST', '/v1/hooks/strict-hook', {
      body: { userId: 7 },
    });
    expect(accepted.status).toBe(202);
  });

  it('applies to chains: a parent output that does not match is recorded as a refused chain', async () => {
    await api.call('POST', '/v1/tools', {
      body: {
        id: 'make-bad-user',
        steps: [{ id: 'out', config: { type: 'transform', transformCode: '() => ({ userId: "nope" })' } }],
      },
    });
    const parent = await api.call<Run>('POST', '/v1/tools/make-bad-user/run', {
      body: { options: { webhookUrl: 'tool:get-user' } },
    });
    expect(parent.body.status).toBe('success');
    await expect
      .poll(
        async () => {
          const list = await api.call<List<Run>>('GET', '/v1/runs?requestSources=tool-chain&toolId=get-user');
          return list.body.data.find((r) => r.parentRunId === parent.body.runId);
        },
        { timeout: 15_000 },
      )
      .toMatchObject({
        status: 'failed',
        error: expect.stringContaining(
          "Chain refused: Inputs do not match the inputSchema of tool 'get-user'",
        ),
      });
  });

  it("applies the payload part of superglue's older wrapped form", async () => {
    const wrapped = {
      id: 'wrapped',
      inputSchema: {
        type: 'object',
        properties: {
          payload: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          credentials: { type: 'object' },
        },
      },
      steps: [{ id: 'echo', config: { type: 'transform', transformCode: '(s) => s.city' } }],
    };
    expect((await api.call('POST', '/v1/tools', { body: wrapped })).status).toBe(201);
    const refused = await api.call<ErrorBody>('POST', '/v1/tools/wrapped/run', { body: { inputs: {} } });
    expect(refused.body.error.message).toContain('inputs.city: is required');
    const ok = await api.call<Run>('POST', '/v1/tools/wrapped/run', { body: { inputs: { city: 'Oslo' } } });
    expect(ok.body).toMatchObject({ status: 'success', data: 'Oslo' });
  });
});
