/**
 * The client of kubeglue's own callers (contract/api/route-client.ts), which the dashboard and the CLI
 * build on: requests named by their route, sent to a real HTTP server, and every failure read as one
 * ApiFailure. The `@ts-expect-error` lines are checked by `npm run typecheck`: a request the route table
 * does not allow does not compile.
 */
import { type AddressInfo, createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ApiFailure, RouteClient, routeUrl } from '../../../contract/api/route-client.ts';
import * as routes from '../../../contract/api/route-paths.ts';
import { ROUTE_TABLE } from '../../../contract/api/routes.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const KEY = 'kg_route-client-test-key-5d1e9b7a2c40';

/** An address where nothing listens: a port this process just had and closed. */
async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

describe('route paths', () => {
  it('name every operation of the route table with its method and path', () => {
    expect(Object.entries(routes)).toEqual(
      ROUTE_TABLE.map(({ operationId, method, path }) => [operationId, `${method} ${path}`]),
    );
  });
});

describe('routeUrl', () => {
  it('percent-encodes each path parameter: a "/", spaces, "?", "#" and "%" stay inside it', () => {
    expect(routeUrl(routes.getRun, { runId: 'a/b c?d#e%f' })).toBe('/runs/a%2Fb%20c%3Fd%23e%25f');
    expect(routeUrl(routes.getToolSchedule, { toolId: 'Open Todos', scheduleId: 'nightly/eu' })).toBe(
      '/tools/Open%20Todos/schedules/nightly%2Feu',
    );
  });

  it('leaves unset and empty query values out and writes numbers and booleans as text', () => {
    expect(
      routeUrl(
        routes.listTools,
        {},
        { search: 'a b&c', folder: undefined, limit: '', page: 2, includeArchived: true },
      ),
    ).toBe('/tools?search=a+b%26c&page=2&includeArchived=true');
  });

  it('refuses an empty path parameter before anything is sent', () => {
    expect(() => routeUrl(routes.getTool, { toolId: '' })).toThrow(
      expect.objectContaining({ name: 'ApiFailure', code: 'EMPTY_PARAMETER', status: 0 }),
    );
  });
});

describe('a RouteClient', () => {
  const target = useHttpTarget({ resetBeforeEach: true });
  const client = (redact?: (text: string) => string) =>
    new RouteClient({
      base: `${target.url}/v1`,
      where: target.url,
      headers: { authorization: `Bearer ${KEY}` },
      ...(redact ? { redact } : {}),
    });
  const failureOf = (promise: Promise<unknown>) =>
    promise.then(
      () => {
        throw new Error('expected a failure');
      },
      (error: unknown) => {
        expect(error).toBeInstanceOf(ApiFailure);
        return error as ApiFailure;
      },
    );

  it("sends the route's method to its path, the parameters encoded, the key in the header, the body as JSON", async () => {
    target.route('PUT', '/v1/tools/Open%20Todos/schedules/nightly%2Feu', (req) => ({
      body: { id: 'nightly/eu', toolId: 'Open Todos', seen: req.json },
    }));
    const answer = await client().call(routes.updateToolSchedule, {
      params: { toolId: 'Open Todos', scheduleId: 'nightly/eu' },
      body: { enabled: false },
    });
    expect(answer).toMatchObject({ id: 'nightly/eu', toolId: 'Open Todos' });
    const [request] = target.requests;
    expect(request?.method).toBe('PUT');
    expect(request?.url).toBe('/v1/tools/Open%20Todos/schedules/nightly%2Feu');
    expect(request?.headers).toMatchObject({
      authorization: `Bearer ${KEY}`,
      accept: 'application/json',
      'content-type': 'application/json',
    });
    expect(request?.json).toEqual({ enabled: false });
  });

  it('sends a file as it is, with its own content type', async () => {
    target.route('PUT', '/v1/systems/crm/documentation', (req) => ({
      status: 202,
      body: { data: { type: req.headers['content-type'], text: req.text } },
    }));
    const file = new Blob(['openapi: 3.1.0\n'], { type: 'application/yaml' });
    const answer = await client().call(routes.uploadSystemDocumentation, {
      params: { systemId: 'crm' },
      query: { filename: 'api.yaml' },
      body: file,
    });
    expect(answer.data).toEqual({ type: 'application/yaml', text: 'openapi: 3.1.0\n' });
    expect(target.requests[0]?.url).toBe('/v1/systems/crm/documentation?filename=api.yaml');
  });

  it("reads the API's error answer: message, code, hint, issues at their fields and the trace id", async () => {
    target.route('POST', '/v1/tools', {
      status: 400,
      headers: { 'x-trace-id': 'trace-1' },
      body: {
        error: {
          message: 'Invalid tool: steps[0].id: required',
          code: 'KG_ERR_INVALID_BODY',
          hint: 'Fix the fields named.',
          issues: [{ path: ['steps', 0, 'id'], message: 'required' }, { message: 'no path' }],
        },
      },
    });
    const failure = await failureOf(client().call(routes.createTool, { body: { id: 't', steps: [] } }));
    expect(failure).toMatchObject({
      status: 400,
      message: 'Invalid tool: steps[0].id: required',
      code: 'KG_ERR_INVALID_BODY',
      hint: 'Fix the fields named.',
      traceId: 'trace-1',
      issues: [{ path: ['steps', 0, 'id'], message: 'required' }],
    });
    expect(failure.body).toMatchObject({ error: { code: 'KG_ERR_INVALID_BODY' } });
  });

  it("says what a page that is not the API's answered, blanked by the transport before it is cut short", async () => {
    target.route('GET', '/v1/runs/some-run', (req) => ({
      status: 502,
      headers: { 'content-type': 'text/html' },
      body: `<html>${'='.repeat(170)}${String(req.headers.authorization)}</html>`,
    }));
    const blank = (text: string) => text.replaceAll(KEY, '<redacted>');
    const failure = await failureOf(client(blank).call(routes.getRun, { params: { runId: 'some-run' } }));
    expect(failure).toMatchObject({ status: 502, code: 'HTTP_ERROR', body: undefined });
    expect(failure.message).toMatch(
      /^GET \/v1\/runs\/some-run answered HTTP 502 Bad Gateway: <html>=+Bearer <red/,
    );
    expect(failure.message).not.toContain(KEY.slice(0, 8));
  });

  it('says which API it could not reach, and what to do', async () => {
    const closed = await closedPortUrl();
    const nowhere = new RouteClient({ base: `${closed}/v1`, where: closed, headers: {} });
    const failure = await failureOf(nowhere.call(routes.getMe));
    expect(failure).toMatchObject({ status: 0, code: 'NETWORK_ERROR', hint: expect.any(String) });
    expect(failure.message).toBe(`cannot reach the kubeglue API at ${closed}: ECONNREFUSED`);
  });

  it('lets an aborted request end as an abort, not as a failure of the API', async () => {
    target.hold('/v1/me');
    const abort = new AbortController();
    const pending = client().call(routes.getMe, { signal: abort.signal });
    abort.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('refuses a success answer that is not JSON', async () => {
    target.route('GET', '/v1/me', { body: 'not json' });
    const failure = await failureOf(client().call(routes.getMe));
    expect(failure).toMatchObject({ status: 200, code: 'UNEXPECTED_ANSWER' });
    expect(failure.message).toBe('GET /v1/me answered something that is not JSON');
  });

  it('types each request from the route table (checked by the type check)', async () => {
    target.route('GET', '/v1/runs/r1', { body: { runId: 'r1' } });
    const run = await client().call(routes.getRun, { params: { runId: 'r1' } });
    const runId: string = run.runId;
    expect(runId).toBe('r1');
    const mistakes = async (c: RouteClient) => {
      // @ts-expect-error a route with a path parameter needs it
      await c.call(routes.getRun);
      // @ts-expect-error the parameter is named as the path names it
      await c.call(routes.getRun, { params: { id: 'r1' } });
      // @ts-expect-error a query parameter the route does not take
      await c.call(routes.listRuns, { query: { tool: 'x' } });
      // @ts-expect-error the key never travels in a URL
      await c.call(routes.listRuns, { query: { token: KEY } });
      // @ts-expect-error a route whose body is required
      await c.call(routes.createTool, {});
      // @ts-expect-error a route that is not in the table
      await c.call('GET /runs/{runId}/steps', { params: { runId: 'r1' } });
    };
    expect(mistakes).toBeTypeOf('function');
  });
});
