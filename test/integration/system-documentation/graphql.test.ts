/**
 * A GraphQL system's documentation is its schema, against a real GraphQL server (graphql-js +
 * graphql-http): introspected at the endpoint with the system's token (a system URL ending in /graphql,
 * a documentationUrl ending in /graphql or marked #graphql), or read from schema language, and searchable
 * like OpenAPI documentation.
 */
import { getIntrospectionQuery } from 'graphql';
import { describe, expect, it } from 'vitest';
import { useTestApi, waitForDocumentation } from '../../support/embedded.ts';
import { useStarted } from '../../support/fixture.ts';
import { GRAPHQL_TOKEN, startGraphqlServer } from '../../support/graphql-server.ts';

interface Operation {
  operation: string;
  name: string;
  type: string;
  description?: string;
  args: Array<{ name: string; type: string; defaultValue?: string }>;
}
interface Schema {
  kind: string;
  source: string;
  endpoint?: string;
  operations: Operation[];
  types: Array<{ kind: string; name: string; fields: Array<{ name: string }>; description?: string }>;
}
interface SearchAnswer {
  data: string;
  results: Array<{ title: string; text: string; source: { document: string; graphql?: string } }>;
}

const api = useTestApi();
const server = useStarted(
  () => startGraphqlServer(),
  (started) => started.stop(),
);

async function createSystem(body: Record<string, unknown>): Promise<void> {
  const created = await api.call('POST', '/v1/systems', {
    body: { authType: 'bearer', credentials: { bearerToken: GRAPHQL_TOKEN }, ...body },
  });
  expect(created.status, created.text).toBe(201);
}

const settled = (systemId: string) => waitForDocumentation(api, systemId);

async function schemaOf(systemId: string): Promise<Schema> {
  const { body } = await api.call<{ data: { summary: { documents: Schema[] } } }>(
    'GET',
    `/v1/systems/${systemId}/documentation`,
  );
  expect(body.data.summary.documents).toHaveLength(1);
  return body.data.summary.documents[0] as Schema;
}

function search(systemId: string, keywords: string) {
  return api.call<SearchAnswer>('POST', `/v1/systems/${systemId}/documentation/search`, {
    body: { keywords, limit: 3 },
  });
}

describe('a GraphQL endpoint documents itself', () => {
  it("is introspected with the system's token when the system's URL ends in /graphql, and searchable", async () => {
    const mark = server.requests.length;
    await createSystem({ id: 'tracker', url: server.endpoint });
    expect(await settled('tracker')).toMatchObject({ status: 'ready', source: server.endpoint });
    const introspection = server.requests.slice(mark).find((request) => request.method === 'POST');
    expect(introspection?.headers.authorization).toBe(`Bearer ${GRAPHQL_TOKEN}`);
    expect(JSON.stringify(introspection?.body)).toContain('__schema');

    const schema = await schemaOf('tracker');
    expect(schema).toMatchObject({
      kind: 'graphql-schema',
      source: server.endpoint,
      endpoint: server.endpoint,
    });
    expect(schema.operations.map((operation) => `${operation.operation} ${operation.name}`)).toEqual([
      'query tasks',
      'query task',
      'query echo',
      'query slow',
      'query fail',
      'mutation addTask',
    ]);
    expect(schema.operations[0]).toEqual({
      operation: 'query',
      name: 'tasks',
      type: 'TaskConnection!',
      description: 'Tasks, oldest first, `first` at a time after the cursor `after`; `done` filters.',
      args: [
        { name: 'first', type: 'Int', defaultValue: '10' },
        { name: 'after', type: 'String' },
        { name: 'done', type: 'Boolean' },
      ],
    });
    // Built-in scalars, introspection and root types are left out.
    expect(schema.types.map((type) => type.name).sort()).toEqual([
      'PageInfo',
      'Task',
      'TaskConnection',
      'TaskEdge',
      'User',
    ]);

    const adding = await search('tracker', 'add a new task');
    expect(adding.status, adding.text).toBe(200);
    expect(adding.body.results[0]).toMatchObject({
      title: 'mutation addTask: Task! - Adds a task (not done, unassigned) and returns it.',
      source: { document: server.endpoint, graphql: 'Mutation.addTask' },
    });
    expect(adding.body.results[0]?.text).toContain('- title: String!');
    const paging = await search('tracker', 'hasNextPage endCursor');
    expect(paging.body.results.map((result) => result.source.graphql)).toContain('PageInfo');
    expect(paging.body.data).toContain('Source: ');
  });

  it('is introspected at a documentationUrl marked #graphql, and read from a schema language file', async () => {
    await createSystem({ id: 'hinted', url: server.url, documentationUrl: `${server.url}/api#graphql` });
    expect(await settled('hinted')).toMatchObject({ status: 'ready' });
    expect((await schemaOf('hinted')).operations).toHaveLength(6);
    expect(server.requests.some((request) => request.path === '/api' && request.method === 'POST')).toBe(
      true,
    );

    await createSystem({
      id: 'from-file',
      url: server.url,
      documentationUrl: `${server.url}/schema.graphql`,
    });
    expect(await settled('from-file')).toMatchObject({ status: 'ready' });
    const schema = await schemaOf('from-file');
    expect(schema).toMatchObject({ kind: 'graphql-schema', source: `${server.url}/schema.graphql` });
    expect(schema.types.find((type) => type.name === 'Task')?.description).toBe('A task of the tracker.');
    const found = await search('from-file', 'assignee unknown user');
    expect(found.body.results[0]?.source.graphql).toBe('Task');
  });

  it('is read from an uploaded introspection answer', async () => {
    const answer = await fetch(server.endpoint, {
      method: 'POST',
      headers: { authorization: `Bearer ${GRAPHQL_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: getIntrospectionQuery() }),
    });
    await createSystem({ id: 'uploaded', url: server.url });
    const put = await api.call('PUT', '/v1/systems/uploaded/documentation', {
      rawBody: await answer.text(),
      headers: { 'content-type': 'application/json' },
    });
    expect(put.status, put.text).toBe(202);
    expect(await settled('uploaded')).toMatchObject({ status: 'ready' });
    const schema = await schemaOf('uploaded');
    expect(schema.kind).toBe('graphql-schema');
    expect(schema.operations.map((operation) => operation.name)).toContain('addTask');
  });

  it('keeps only what documentationKeywords mention, and reads as schema language in text', async () => {
    await createSystem({ id: 'narrow', url: server.endpoint, documentationKeywords: ['page'] });
    expect(await settled('narrow')).toMatchObject({ status: 'ready' });
    const schema = await schemaOf('narrow');
    expect(schema.operations.map((operation) => operation.name)).toEqual(['tasks']);
    expect(schema.types.map((type) => type.name).sort()).toEqual(['PageInfo', 'TaskConnection']);
    const text = await api.call('GET', '/v1/systems/narrow/documentation?format=text');
    expect(text.text).toContain(
      'query tasks(first: Int = 10, after: String, done: Boolean): TaskConnection!\n' +
        '  Tasks, oldest first, `first` at a time after the cursor `after`; `done` filters.',
    );
    expect(text.text).toContain(
      'type PageInfo - Where a page of a connection ends (Relay).\n  - startCursor: String',
    );
  });

  it("keeps the system's token from an endpoint outside its origins, and fails with what the endpoint said", async () => {
    const mark = server.requests.length;
    // localhost is another origin than the system's 127.0.0.1: no credential goes there.
    const elsewhere = server.endpoint.replace('127.0.0.1', 'localhost');
    await createSystem({ id: 'elsewhere', url: server.url, documentationUrl: elsewhere });
    const state = await settled('elsewhere');
    expect(state).toMatchObject({ status: 'failed' });
    expect(state.error).toContain(`${elsewhere} answered HTTP 401`);
    const sent = server.requests.slice(mark).filter((request) => request.method === 'POST');
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.every((request) => request.headers.authorization === undefined)).toBe(true);
  });
});
