import { beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { notificationSigningKey } from '../../../operator/app.ts';
import { verifySignature } from '../../../operator/outbox/notify.ts';
import { parseMasterKey } from '../../../platform/secret-box.ts';
import { TEST_ADMIN_KEY, TEST_MASTER_KEY, useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

type List<T> = { data: T[]; total: number };

const target = useHttpTarget();
const api = useTestApi({ KUBEGLUE_NOTIFY_RETRY_DELAYS_MS: '200' });
const echoTool = {
  id: 'echo',
  steps: [{ id: 'keep', config: { type: 'transform', transformCode: '(s) => s' } }],
  outputTransform: '(s) => ({ payload: s.keep.data })',
};

beforeAll(async () => {
  expect((await api.call('POST', '/v1/tools', { body: echoTool })).status).toBe(201);
});

const resultOf = async (runId: string) =>
  (
    await api.call<{ data: { data: { payload: Record<string, unknown> } } }>(
      'GET',
      `/v1/runs/${runId}/results`,
    )
  ).body.data.data.payload;

describe('incoming webhooks', () => {
  it('answers challenges without running the tool', async () => {
    const before = (await api.call<List<Run>>('GET', '/v1/runs?requestSources=webhook')).body.total;
    const challenge = await api.call('POST', '/v1/hooks/echo', { body: { challenge: 'c-123' } });
    expect(challenge).toMatchObject({ status: 200, body: { challenge: 'c-123' } });
    const verification = await api.call('POST', '/v1/hooks/echo', {
      body: { type: 'verification', verification_token: 'v-9' },
    });
    expect(verification.body).toEqual({ verification_token: 'v-9' });
    const validation = await api.call('POST', '/v1/hooks/echo?validationToken=vt-1', { body: {} });
    expect(validation.text).toBe('vt-1');
    expect(validation.headers.get('content-type')).toMatch(/^text\/plain/);
    const hub = await api.call('GET', '/v1/hooks/echo?hub.mode=subscribe&hub.challenge=h-5');
    expect(hub.text).toBe('h-5');
    expect((await api.call('GET', '/v1/hooks/echo?validationToken=t-7')).text).toBe('t-7');
    expect((await api.call('GET', '/v1/hooks/echo?challenge=x-1')).text).toBe('x-1');
    expect((await api.call('GET', '/v1/hooks/echo')).status).toBe(400);
    expect((await api.call<List<Run>>('GET', '/v1/runs?requestSources=webhook')).body.total).toBe(before);
  });

  it('runs the tool with the payload and the raw request, answering 202 accepted', async () => {
    const accepted = await api.call<{ runId: string; status: string; toolId: string }>(
      'POST',
      `/v1/hooks/echo?token=${encodeURIComponent(TEST_ADMIN_KEY)}`,
      { key: null, body: { event: 'created', id: 42 }, headers: { 'x-signature': 'sig-abc' } },
    );
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ status: 'accepted', toolId: 'echo' });
    const run = await waitForRun<Run>(api, accepted.body.runId);
    expect(run).toMatchObject({ status: 'success', requestSource: 'webhook' });
    const payload = await resultOf(run.runId);
    expect(payload).toMatchObject({ event: 'created', id: 42 });
    const webhook = payload.__webhook__ as {
      headers: Record<string, string>;
      query: Record<string, string>;
      rawBody: string;
    };
    expect(webhook.headers['x-signature']).toBe('sig-abc');
    expect(webhook.rawBody).toBe('{"event":"created","id":42}');
    expect(webhook.query).not.toHaveProperty('token');
    expect(JSON.stringify(payload)).not.toContain(TEST_ADMIN_KEY);
  });

  it('accepts form bodies and wraps a non-object JSON body as {body}', async () => {
    const form = await api.call<{ runId: string }>('POST', '/v1/hooks/echo', {
      rawBody: 'a=1&b=two',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(202);
    await waitForRun(api, form.body.runId);
    expect(await resultOf(form.body.runId)).toMatchObject({ a: '1', b: 'two' });
    const list = await api.call<{ runId: string }>('POST', '/v1/hooks/echo', { body: [1, 2] });
    await waitForRun(api, list.body.runId);
    expect(await resultOf(list.body.runId)).toMatchObject({ body: [1, 2] });
  });

  it('runs with dev credentials for mode=dev and refuses unknown and archived tools', async () => {
    const dev = await api.call<{ runId: string }>('POST', '/v1/hooks/echo?mode=dev', { body: {} });
    const run = await waitForRun<Run & { executionMode: string }>(api, dev.body.runId);
    expect(run.executionMode).toBe('dev');
    expect((await api.call('POST', '/v1/hooks/nope', { body: {} })).status).toBe(404);
    await api.call('POST', '/v1/tools', { body: { ...echoTool, id: 'retired' } });
    await api.call('PUT', '/v1/tools/retired', { body: { archived: true } });
    expect((await api.call('POST', '/v1/hooks/retired', { body: {} })).status).toBe(400);
    expect((await api.call('POST', '/v1/hooks/echo', { body: {}, key: null })).status).toBe(401);
  });
});

describe('chaining', () => {
  it('starts the next tool with the output on success and finds it by requestSources=tool-chain', async () => {
    await api.call('POST', '/v1/tools', {
      body: {
        id: 'first',
        steps: [{ id: 'a', config: { type: 'transform', transformCode: '() => ({ n: 21 })' } }],
      },
    });
    await api.call('POST', '/v1/tools', {
      body: {
        id: 'second',
        steps: [{ id: 'b', config: { type: 'transform', transformCode: '(s) => s.n * 2' } }],
      },
    });
    const first = await api.call<Run>('POST', '/v1/tools/first/run', {
      body: { options: { webhookUrl: 'tool:second' } },
    });
    expect(first.body.status).toBe('success');
    let chained: Run | undefined;
    await expect
      .poll(
        async () => {
          const list = await api.call<List<Run>>('GET', '/v1/runs?requestSources=tool-chain&toolId=second');
          chained = list.body.data.find((r) => r.parentRunId === first.body.runId);
          return chained?.status;
        },
        { timeout: 15_000 },
      )
      .toBe('success');
    const results = await api.call<{ data: { data: unknown } }>('GET', `/v1/runs/${chained?.runId}/results`);
    expect(results.body.data.data).toBe(42);
  });

  it('refuses a tool chaining to itself and records why', async () => {
    const run = await api.call<Run>('POST', '/v1/tools/first/run', {
      body: { options: { webhookUrl: 'tool:first' } },
    });
    await expect
      .poll(
        async () => {
          const list = await api.call<List<Run>>('GET', '/v1/runs?requestSources=tool-chain&toolId=first');
          return list.body.data.find((r) => r.parentRunId === run.body.runId)?.error;
        },
        { timeout: 15_000 },
      )
      .toMatch(/Chain refused: tool 'first' cannot chain to itself/);
  });
});

describe('completion notifications', () => {
  it('posts the signed run to the webhook URL, retrying after a failed first attempt', async () => {
    let attempts = 0;
    target.route('POST', '/notify', () => {
      attempts++;
      return attempts === 1 ? { status: 500, body: 'try again' } : { status: 204 };
    });
    const run = await api.call<Run>('POST', '/v1/tools/first/run', {
      body: { options: { webhookUrl: `${target.url}/notify` } },
    });
    await expect.poll(() => attempts, { timeout: 15_000 }).toBe(2);
    const delivered = target.requests.filter((r) => r.path === '/notify').at(-1);
    const body = delivered?.json as { runId: string; status: string; data: unknown };
    expect(body).toMatchObject({ runId: run.body.runId, status: 'success', data: { n: 21 } });
    const key = notificationSigningKey(undefined, parseMasterKey(TEST_MASTER_KEY) as Buffer);
    expect(
      verifySignature(key, delivered?.headers as Record<string, string>, delivered?.body as Buffer),
    ).toBe(true);
  });
});
