/**
 * The CLI's client (bin/cli/client.ts) on the route client: answers are read with the CLI's own zod
 * schemas (answers.ts), which the type check holds to the route table's answers (the `@ts-expect-error`
 * lines), against a real HTTP server.
 */
import { describe, expect, it } from 'vitest';
import { RunAnswer, ToolListAnswer } from '../../../bin/cli/answers.ts';
import { ApiClient, isApiCode } from '../../../bin/cli/client.ts';
import { ApiFailure } from '../../../contract/api/route-client.ts';
import * as routes from '../../../contract/api/route-paths.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const KEY = 'kg_cli-client-test-key-8c2f61d0a9e4';

describe("the CLI's client", () => {
  const target = useHttpTarget({ resetBeforeEach: true });
  const client = () =>
    new ApiClient(
      { url: target.url, apiKey: KEY },
      { version: '1.2.3', signal: new AbortController().signal },
    );

  it('sends its User-Agent and key, and keeps an answer as read and as sent', async () => {
    target.route('GET', '/v1/runs/r%2F1', {
      body: {
        runId: 'r/1',
        toolId: 't',
        status: 'success',
        metadata: { startedAt: '2025-01-01T00:00:00Z' },
        extra: 1,
      },
    });
    const answer = await client().request(routes.getRun, RunAnswer, { params: { runId: 'r/1' } });
    expect(answer.value).toMatchObject({ runId: 'r/1', status: 'success' });
    expect(answer.raw).toMatchObject({ extra: 1 });
    expect(target.requests[0]?.headers).toMatchObject({
      authorization: `Bearer ${KEY}`,
      'user-agent': 'kubeglue-cli/1.2.3',
    });
  });

  it('refuses an answer its schema does not read, naming the route', async () => {
    target.route('GET', '/v1/runs/r1', { body: { runId: 'r1', status: 'done' } });
    const failure = await client()
      .request(routes.getRun, RunAnswer, { params: { runId: 'r1' } })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApiFailure);
    expect(failure).toMatchObject({ code: 'UNEXPECTED_ANSWER' });
    expect((failure as ApiFailure).message).toMatch(/^unexpected answer to GET \/v1\/runs\/\{runId\}: /);
    expect(isApiCode(failure as ApiFailure)).toBe(false);
  });

  it('reads every page of a list', async () => {
    target.route('GET', '/v1/tools', (req) => {
      const page = Number(new URLSearchParams(req.url.split('?')[1]).get('page'));
      const tool = { id: `tool-${page}`, steps: [], updatedAt: '2025-01-01T00:00:00Z' };
      return { body: { data: [tool], page, limit: 100, total: 2, hasMore: page < 2 } };
    });
    const tools = await client().allPages(routes.listTools, ToolListAnswer, {
      query: { includeArchived: 'true' },
    });
    expect(tools.map((tool) => tool.value.id)).toEqual(['tool-1', 'tool-2']);
    expect(target.requests.map((req) => req.url)).toEqual([
      '/v1/tools?includeArchived=true&page=1&limit=100',
      '/v1/tools?includeArchived=true&page=2&limit=100',
    ]);
  });

  it("reads a route's answer only with a schema that takes what the route table says it answers", () => {
    const mistakes = async (c: ApiClient) => {
      // @ts-expect-error a list's schema for a run
      await c.request(routes.getRun, ToolListAnswer, { params: { runId: 'r1' } });
      // @ts-expect-error a run's schema for a list
      await c.request(routes.listTools, RunAnswer);
    };
    expect(mistakes).toBeTypeOf('function');
  });
});
