/**
 * Answers a client can act on: what a failed run carries, which trace id it reports, what a wrong method,
 * an unknown field or a step URL that cannot work are told, and that nothing is sniffed.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { Run } from '../../../contract/api/run.ts';
import { useTestApi } from '../../support/embedded.ts';

const api = useTestApi();

beforeAll(async () => {
  const tool = {
    id: 'fails-second',
    steps: [
      { id: 'first', config: { type: 'transform', transformCode: '() => ({ ok: true })' } },
      { id: 'second', config: { type: 'transform', transformCode: '() => { throw new Error("boom") }' } },
    ],
  };
  expect((await api.call('POST', '/v1/tools', { body: tool })).status).toBe(201);
});

describe('answers', () => {
  it('leave data out of a failed sync run and of its failed step, keeping the error', async () => {
    const run = await api.call<Run>('POST', '/v1/tools/fails-second/run', { body: {} });
    expect(run.body.status).toBe('failed');
    expect(run.body.error).toContain('boom');
    expect(run.body).not.toHaveProperty('data');
    const [first, second] = run.body.stepResults ?? [];
    expect(first).toMatchObject({ stepId: 'first', success: true, data: { ok: true } });
    expect(second).toMatchObject({
      stepId: 'second',
      success: false,
      error: expect.stringContaining('boom'),
    });
    expect(second).not.toHaveProperty('data');
    // No null anywhere a client might iterate.
    expect(run.text).not.toContain('"data":null');
  });

  it("echo the caller's options.traceId in X-Trace-Id, as the run records it", async () => {
    const run = await api.call<Run>('POST', '/v1/tools/fails-second/run', {
      body: { options: { traceId: 'caller-trace-42' } },
      headers: { 'X-Trace-Id': 'header-trace-1' },
    });
    expect(run.body.traceId).toBe('caller-trace-42');
    expect(run.headers.get('x-trace-id')).toBe('caller-trace-42');
    const plain = await api.call<Run>('POST', '/v1/tools/fails-second/run', {
      body: {},
      headers: { 'X-Trace-Id': 'header-trace-2' },
    });
    expect(plain.body.traceId).toBe('header-trace-2');
    expect(plain.headers.get('x-trace-id')).toBe('header-trace-2');
  });

  it('answer a known path with a wrong method 405 and Allow', async () => {
    const wrong = await api.call<ErrorBody>('DELETE', '/v1/runs');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, HEAD');
    expect(wrong.body.error.code).toBe('KG_ERR_METHOD_NOT_ALLOWED');
    const tool = await api.call<ErrorBody>('POST', '/v1/tools/fails-second');
    expect(tool.status).toBe(405);
    expect(tool.headers.get('allow')).toBe('DELETE, GET, HEAD, PUT');
    expect((await api.call('GET', '/v1/nowhere')).status).toBe(404);
  });

  it('suggest the field a run request meant', async () => {
    const wrong = await api.call<ErrorBody>('POST', '/v1/tools/fails-second/run', {
      body: { payload: { a: 1 } },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.message).toContain("'payload': did you mean 'inputs'?");
  });

  it('refuse at save time a step URL with no scheme and no system, or an unsupported scheme', async () => {
    const tool = (url: string) => ({ id: 'bad-url', steps: [{ id: 's', config: { url } }] });
    const relative = await api.call<ErrorBody>('POST', '/v1/tools', { body: tool('/users') });
    expect(relative.status).toBe(422);
    expect(relative.body.error.message).toContain(
      "steps[0] (s).config.url: '/users' has no scheme and the step has no systemId",
    );
    const gopher = await api.call<ErrorBody>('POST', '/v1/tools', { body: tool('gopher://old.example/x') });
    expect(gopher.status).toBe(422);
    expect(gopher.body.error.code).toBe('KG_ERR_PROTOCOL_UNSUPPORTED');
    expect(gopher.body.error.message).toContain("unsupported URL scheme 'gopher:'");
    // An expression at the start supplies the scheme when the run renders it.
    expect((await api.call('POST', '/v1/tools', { body: tool('<<(s) => s.base>>/users') })).status).toBe(201);
  });

  it('refuse at save time a step that speaks MSSQL or MongoDB, while such systems can still be stored', async () => {
    const mssql = await api.call<ErrorBody>('POST', '/v1/tools', {
      body: {
        id: 'sales',
        steps: [{ id: 'q', config: { url: 'mssql://sql.example/sales', body: 'SELECT 1' } }],
      },
    });
    expect(mssql.status).toBe(422);
    expect(mssql.body.error.code).toBe('KG_ERR_PROTOCOL_UNSUPPORTED');
    expect(mssql.body.error.message).toContain(
      'steps[0] (q).config.url: MSSQL (mssql://) is a data store no step can use yet; steps speak http, https, postgres',
    );
    const store = await api.call('POST', '/v1/systems', {
      body: { id: 'orders-db', url: 'mongodb+srv://cluster.example/shop' },
    });
    expect(store.status).toBe(201);
    const relative = await api.call<ErrorBody>('POST', '/v1/tools', {
      body: { id: 'orders', steps: [{ id: 'find', config: { systemId: 'orders-db', url: '/orders' } }] },
    });
    expect(relative.status).toBe(422);
    expect(relative.body.error.code).toBe('KG_ERR_PROTOCOL_UNSUPPORTED');
    expect(relative.body.error.message).toContain(
      "steps[0] (find).config.systemId: system 'orders-db': MongoDB (mongodb+srv://) is a data store no step can use yet",
    );
  });

  it('mark every answer nosniff, the plain-text webhook challenge included', async () => {
    const challenge = await api.call('GET', '/v1/hooks/fails-second?challenge=%3Cscript%3E');
    expect(challenge.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(challenge.headers.get('x-content-type-options')).toBe('nosniff');
    expect((await api.call('GET', '/v1/runs')).headers.get('x-content-type-options')).toBe('nosniff');
  });
});
