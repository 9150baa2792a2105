/**
 * GraphQL request steps end to end in the engine: real undici HTTP against a real GraphQL server
 * (graphql-js + graphql-http, test/support/graphql-server.ts) and real isolated-vm for templates. What the
 * server received is read from its request log; what the user sees from the run result.
 */
import { describe, expect, it } from 'vitest';
import { Tool, type ToolInput } from '../../../contract/api/tool.ts';
import type { JsonObject } from '../../../contract/json.ts';
import type { ResolvedSystem } from '../../../contract/wire/run-order.ts';
import { runTool } from '../../../engine/run-tool.ts';
import type { EngineEvent, EngineLimits, EngineResult } from '../../../engine/types.ts';
import { useEngineDeps } from '../../support/engine.ts';
import { useStarted } from '../../support/fixture.ts';
import { GRAPHQL_TOKEN, type ReceivedRequest, startGraphqlServer } from '../../support/graphql-server.ts';

const server = useStarted(
  () => startGraphqlServer(),
  (started) => started.stop(),
);
const engine = useEngineDeps();

const tracker = (): ResolvedSystem => ({
  id: 'tracker',
  url: server.url,
  authType: 'bearer',
  credentials: { bearerToken: GRAPHQL_TOKEN },
});

interface RunOptions {
  inputs?: JsonObject;
  timeoutMs?: number;
  systems?: ResolvedSystem[];
  limits?: Partial<EngineLimits>;
  events?: EngineEvent[];
}

function run(tool: Omit<ToolInput, 'id'>, options: RunOptions = {}): Promise<EngineResult> {
  return runTool(
    { ...engine.deps, ...(options.limits ? { limits: { ...engine.deps.limits, ...options.limits } } : {}) },
    {
      tool: Tool.parse({ id: 'engine-graphql-test', ...tool }),
      inputs: options.inputs ?? {},
      systems: options.systems ?? [tracker()],
      timeoutMs: options.timeoutMs,
      traceId: 'engine-graphql-test',
      signal: new AbortController().signal,
      onEvent: (event) => options.events?.push(event),
    },
  );
}

/** A one-step tool: the GraphQL request on the tracker system (to /graphql unless `extra` names a url). */
function graphqlStep(
  graphql: { query: string; variables?: Record<string, unknown>; operationName?: string },
  extra: Record<string, unknown> = {},
  step: Record<string, unknown> = {},
): Omit<ToolInput, 'id'> {
  return {
    steps: [
      {
        id: 'q',
        ...step,
        config: { url: '/graphql', systemId: 'tracker', method: 'POST', graphql, ...extra },
      },
    ],
  };
}

/** The data of the run's first step (which must have some). */
function stepData<T>(result: EngineResult): T {
  const data = result.stepResults[0]?.data;
  expect(data).toBeDefined();
  return data as T;
}

/** What the server received from now on (the log is shared by the file's tests). */
function receivedFrom(mark: number): ReceivedRequest[] {
  return server.requests.slice(mark);
}

describe('a GraphQL request', () => {
  it('goes out as a POST with a JSON body of the query, variables and operationName; the step data is data', async () => {
    const mark = server.requests.length;
    const query = 'query One($id: ID!) { task(id: $id) { id title } }\nquery Other { echo(text: "x") }';
    const result = await run(graphqlStep({ query, variables: { id: '2' }, operationName: 'One' }));
    expect(result.status, result.error).toBe('success');
    expect(result.stepResults[0]).toMatchObject({
      success: true,
      data: { task: { id: '2', title: 'write the report' } },
    });
    expect(result.stepResults[0]?.notes).toBeUndefined();
    const [request] = receivedFrom(mark);
    expect(request?.method).toBe('POST');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.headers.accept).toBe('application/graphql-response+json, application/json;q=0.9');
    expect(request?.body).toEqual({ query, operationName: 'One', variables: { id: '2' } });
  });

  it('fails the step with the messages, path, location and code of errors without data (HTTP 200)', async () => {
    const result = await run(graphqlStep({ query: '{\n  task(id: "77") { title }\n}' }));
    expect(result.status).toBe('failed');
    expect(result.stepResults[0]).toMatchObject({
      success: false,
      error: 'GraphQL errors and no data: Task 77 not found (at task, 2:3, NOT_FOUND)',
    });
  });

  it('fails the step with the GraphQL errors of a 4xx answer, not its raw body', async () => {
    const refused = await run(graphqlStep({ query: '{ echo(text: "x") }' }), {
      systems: [{ ...tracker(), credentials: { bearerToken: 'wrong-token-123' } }],
    });
    expect(refused.stepResults[0]?.error).toBe(
      `HTTP 401 POST ${server.url}/graphql: GraphQL errors: missing or wrong bearer token (UNAUTHENTICATED)`,
    );
    const invalid = await run(graphqlStep({ query: '{ nope tasks { totalCount } }' }));
    expect(invalid.stepResults[0]?.error).toBe(
      `HTTP 400 POST ${server.url}/graphql: GraphQL errors: Cannot query field "nope" on type "Query". (1:3)`,
    );
  });

  it('succeeds with data beside errors, keeping each error as a note of the step result', async () => {
    const result = await run(
      graphqlStep({ query: '{ tasks(first: 3) { nodes { id assignee { name } } } }' }),
    );
    expect(result.status, result.error).toBe('success');
    const [step] = result.stepResults;
    expect(step?.data).toEqual({
      tasks: {
        nodes: [
          { id: '1', assignee: { name: 'Ada' } },
          { id: '2', assignee: { name: 'Grace' } },
          { id: '3', assignee: null },
        ],
      },
    });
    expect(step?.notes).toEqual([
      'GraphQL error beside data: User 99 not found (at tasks.nodes.2.assignee, 1:32, NOT_FOUND)',
    ]);
  });

  it('lists at most 10 errors of an answer as notes and counts the rest', async () => {
    const fields = Array.from({ length: 12 }, (_, i) => `f${i}: fail(message: "broken ${i}")`).join(' ');
    const result = await run(graphqlStep({ query: `{ echo(text: "kept") ${fields} }` }));
    expect(result.status, result.error).toBe('success');
    const notes = result.stepResults[0]?.notes ?? [];
    expect(notes).toHaveLength(11);
    expect(notes[0]).toMatch(/^GraphQL error beside data: broken 0 \(at f0, 1:\d+, FAILED\)$/);
    expect(notes[10]).toBe('GraphQL errors beside data: 2 more not listed');
  });

  it('keeps at most 20 notes in a step result, however many loop items add', async () => {
    const fields = Array.from({ length: 10 }, (_, i) => `f${i}: fail(message: $m)`).join(' ');
    const result = await run(
      graphqlStep(
        { query: `query ($m: String!) { ${fields} }`, variables: { m: 'item <<currentItem>>' } },
        {},
        { dataSelector: '(s) => [1, 2, 3]' },
      ),
    );
    expect(result.status, result.error).toBe('success');
    const notes = result.stepResults[0]?.notes ?? [];
    expect(notes).toHaveLength(21);
    expect(notes[20]).toBe('more notes were left out (a step keeps 20)');
  });

  it('fails the step when a 2xx answer is not a GraphQL response', async () => {
    const result = await run(graphqlStep({ query: '{ x }' }, { url: '/schema.graphql' }));
    expect(result.stepResults[0]?.error).toMatch(
      /^the answer is not a GraphQL response \(a JSON object with data or errors\): "\\"\\"\\"A task of the tracker/,
    );
  });
});

describe('a plain HTTP step with a GraphQL body', () => {
  it('keeps working as before: the whole answer is its data, errors and all', async () => {
    const result = await run({
      steps: [
        {
          id: 'q',
          config: {
            url: '/graphql',
            systemId: 'tracker',
            method: 'POST',
            body: { query: '{ task(id: "77") { title } }' },
          },
        },
      ],
    });
    expect(result.status, result.error).toBe('success');
    expect(result.stepResults[0]?.data).toEqual({
      errors: [
        {
          message: 'Task 77 not found',
          locations: [{ line: 1, column: 3 }],
          path: ['task'],
          extensions: { code: 'NOT_FOUND' },
        },
      ],
      data: null,
    });
    expect(result.stepResults[0]?.notes).toBeUndefined();
  });
});

describe('variables', () => {
  it('take inputs through templates, keeping their JSON types', async () => {
    const mark = server.requests.length;
    const result = await run(
      graphqlStep({
        query:
          'query ($first: Int, $done: Boolean) { tasks(first: $first, done: $done) { nodes { title } } }',
        variables: { first: '<<count>>', done: '<<(s) => s.which === "done">>' },
      }),
      { inputs: { count: 2, which: 'done' } },
    );
    expect(result.status, result.error).toBe('success');
    expect(receivedFrom(mark)[0]?.body).toMatchObject({ variables: { first: 2, done: true } });
    expect(result.stepResults[0]?.data).toEqual({
      tasks: { nodes: [{ title: 'water the plants' }, { title: 'book the train' }] },
    });
  });

  it('keep an injection attempt through an input a value: it never becomes GraphQL', async () => {
    const attack = '") } mutation { addTask(title: "pwned") { id } } query { echo(text: "';
    const before = server.taskCount();
    const mark = server.requests.length;
    const query = 'query ($text: String!) { echo(text: $text) }';
    const result = await run(graphqlStep({ query, variables: { text: '<<title>>' } }), {
      inputs: { title: attack },
    });
    expect(result.status, result.error).toBe('success');
    expect(result.stepResults[0]?.data).toEqual({ echo: attack });
    expect(receivedFrom(mark)[0]?.body).toEqual({ query, variables: { text: attack } });
    expect(server.taskCount()).toBe(before);
  });

  it('refuses a template in the query at run time too (a definition that was not saved)', async () => {
    const mark = server.requests.length;
    const result = await run(graphqlStep({ query: '{ task(id: "<<id>>") { title } }' }), {
      inputs: { id: '1' },
    });
    expect(result.stepResults[0]?.error).toContain(
      'config.graphql.query: template expressions are not allowed in a GraphQL query (<<id>>)',
    );
    expect(receivedFrom(mark)).toEqual([]);
  });
});

describe('auth and the HTTP path', () => {
  it("sends the System's bearer token to its own origin and keeps it out of the result", async () => {
    const mark = server.requests.length;
    const result = await run(graphqlStep({ query: 'query { echo(text: "tracker-token-7f3a") }' }));
    expect(result.status, result.error).toBe('success');
    expect(receivedFrom(mark)[0]?.headers.authorization).toBe(`Bearer ${GRAPHQL_TOKEN}`);
    expect(result.stepResults[0]?.data).toEqual({ echo: '<<tracker_bearerToken>>' });
  });

  it('follows a 308 redirect on its own origin with the method, body and token', async () => {
    const mark = server.requests.length;
    const result = await run(graphqlStep({ query: '{ echo(text: "here") }' }, { url: '/moved' }));
    expect(result.status, result.error).toBe('success');
    expect(result.stepResults[0]?.data).toEqual({ echo: 'here' });
    const [, followed] = receivedFrom(mark);
    expect(followed).toMatchObject({
      method: 'POST',
      path: '/graphql',
      body: { query: '{ echo(text: "here") }' },
    });
    expect(followed?.headers.authorization).toBe(`Bearer ${GRAPHQL_TOKEN}`);
  });

  it('retries a query after a 503, and never a mutation (modify: true)', async () => {
    server.failNext(1);
    const events: EngineEvent[] = [];
    const query = await run(graphqlStep({ query: '{ echo(text: "again") }' }), { events });
    expect(query.status, query.error).toBe('success');
    expect(events.filter((event) => event.type === 'retry')).toHaveLength(1);

    const before = server.taskCount();
    server.failNext(1);
    const mutation = await run(
      graphqlStep({ query: 'mutation { addTask(title: "once") { id } }' }, {}, { modify: true }),
    );
    expect(mutation.stepResults[0]?.error).toBe(`HTTP 503 POST ${server.url}/graphql: busy, try again`);
    expect(server.taskCount()).toBe(before);
  });

  it('holds the GraphQL data to the step data bound', async () => {
    const result = await run(graphqlStep({ query: '{ tasks(first: 12) { nodes { id title done } } }' }), {
      limits: { maxStepDataBytes: 200 },
    });
    expect(result.status).toBe('failed');
    expect(result.stepResults[0]?.error).toMatch(
      /^the step's data is \d+ bytes of JSON, more than the limit of 200/,
    );
  });

  it("stops a request that runs past the run's deadline", async () => {
    const result = await run(graphqlStep({ query: '{ slow(ms: 5000) }' }), { timeoutMs: 500 });
    expect(result.status).toBe('failed');
    expect(result.error).toBe('Run timed out after 500 ms');
  });
});

const PAGED = `query Tasks($after: String, $first: Int) {
  tasks(first: $first, after: $after) { edges { node { id } } pageInfo { endCursor hasNextPage } totalCount }
}`;

describe('cursor pagination through a connection', () => {
  it('walks the pages by pageInfo.endCursor in $after until hasNextPage is false, merging the edges', async () => {
    const mark = server.requests.length;
    const result = await run(
      graphqlStep(
        { query: PAGED, variables: { first: '<<limit>>' } },
        { pagination: { type: 'cursorBased', pageSize: 5 } },
      ),
    );
    expect(result.status, result.error).toBe('success');
    const [step] = result.stepResults;
    const { tasks } = stepData<{ tasks: { edges: Array<{ node: { id: string } }> } }>(result);
    expect(tasks.edges.map((edge) => edge.node.id)).toEqual([
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
      '7',
      '8',
      '9',
      '10',
      '11',
      '12',
    ]);
    expect(tasks).toMatchObject({ pageInfo: { hasNextPage: false }, totalCount: 12 });
    expect(step?.pagination).toEqual({
      pages: 3,
      items: 12,
      stoppedBy: 'noNextPage',
      reason: "page 3 had pageInfo.hasNextPage false at 'tasks'",
    });
    const variables = receivedFrom(mark).map((request) => (request.body as { variables: unknown }).variables);
    expect(variables).toEqual([
      { first: 5 },
      { first: 5, after: Buffer.from('task:5').toString('base64') },
      { first: 5, after: Buffer.from('task:10').toString('base64') },
    ]);
  });

  it('pages the connection connectionPath names through nodes, with the cursor in cursorVariable', async () => {
    const query = `query ($cursor: String) {
      open: tasks(first: 3, after: $cursor, done: false) { nodes { title } pageInfo { endCursor hasNextPage } }
      all: tasks(first: 1) { totalCount pageInfo { hasNextPage } }
    }`;
    const several = await run(
      graphqlStep({ query }, { pagination: { type: 'cursorBased', cursorVariable: 'cursor' } }),
    );
    expect(several.stepResults[0]?.error).toBe(
      "Pagination on page 1 found several connections in the data ('open', 'all'): set pagination.connectionPath to the one to page through",
    );
    const named = await run(
      graphqlStep(
        { query },
        { pagination: { type: 'cursorBased', cursorVariable: 'cursor', connectionPath: 'open' } },
      ),
    );
    expect(named.status, named.error).toBe('success');
    const { open } = stepData<{ open: { nodes: unknown[] } }>(named);
    expect(open.nodes).toHaveLength(8);
    expect(named.stepResults[0]?.pagination).toMatchObject({ pages: 3, items: 8, stoppedBy: 'noNextPage' });
  });

  it('fails the step when the query does not select pageInfo.hasNextPage, saying what to select', async () => {
    const result = await run(
      graphqlStep(
        {
          query:
            'query ($after: String) { tasks(first: 4, after: $after) { nodes { id } pageInfo { endCursor } } }',
        },
        { pagination: { type: 'cursorBased' } },
      ),
    );
    expect(result.stepResults[0]?.error).toBe(
      "Pagination on page 1: the pageInfo of the connection at 'tasks' has no hasNextPage; select pageInfo { endCursor hasNextPage } in the query",
    );
  });

  it('pages by a cursorPath in the data where there is no Relay connection to follow', async () => {
    const result = await run(
      graphqlStep(
        {
          query:
            'query ($after: String) { tasks(first: 5, after: $after) { nodes { id } pageInfo { endCursor } } }',
        },
        { pagination: { type: 'cursorBased', cursorPath: 'tasks.pageInfo.endCursor', pageSize: 5 } },
      ),
    );
    expect(result.status, result.error).toBe('success');
    expect(stepData<{ tasks: { nodes: unknown[] } }>(result).tasks.nodes).toHaveLength(12);
    expect(result.stepResults[0]?.pagination).toMatchObject({ pages: 4, items: 12, stoppedBy: 'emptyPage' });
  });
});
