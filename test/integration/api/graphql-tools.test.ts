/**
 * GraphQL tools through the REST API of a started server: saved, read back and run against a real GraphQL
 * server with the System's credentials, and refused when saved with every problem at its field (the same
 * check, checkTool, answers a Tool applied with kubectl).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { Run } from '../../../contract/api/run.ts';
import { useTestApi } from '../../support/embedded.ts';
import { useStarted } from '../../support/fixture.ts';
import { GRAPHQL_TOKEN, startGraphqlServer } from '../../support/graphql-server.ts';

const api = useTestApi();
const server = useStarted(
  () => startGraphqlServer(),
  (started) => started.stop(),
);

beforeAll(async () => {
  const created = await api.call('POST', '/v1/systems', {
    body: { id: 'tracker', url: server.url, authType: 'bearer', credentials: { bearerToken: GRAPHQL_TOKEN } },
  });
  expect(created.status, created.text).toBe(201);
});

/** A tool with one GraphQL step on the tracker; `config` and `step` change it. */
function tool(id: string, config: Record<string, unknown>, step: Record<string, unknown> = {}) {
  return {
    id,
    steps: [
      {
        id: 'q',
        ...step,
        config: { url: '/graphql', systemId: 'tracker', method: 'POST', ...config },
      },
    ],
  };
}

async function refusal(body: unknown): Promise<ErrorBody['error']> {
  const answer = await api.call<ErrorBody>('POST', '/v1/tools', { body });
  expect(answer.status, answer.text).toBe(422);
  expect(answer.body.error.code).toBe('KG_ERR_TOOL_INVALID');
  return answer.body.error;
}

describe('a saved GraphQL tool', () => {
  it("is stored as written and runs with the System's token, its errors beside data as notes", async () => {
    const definition = {
      ...tool('first-tasks', {
        graphql: {
          query: 'query Tasks($first: Int) { tasks(first: $first) { nodes { title assignee { name } } } }',
          variables: { first: '<<count>>' },
          operationName: 'Tasks',
        },
      }),
      outputTransform: '(s) => s.q.data.tasks.nodes.map((task) => task.assignee ? task.assignee.name : null)',
    };
    const saved = await api.call<{ steps: Array<{ config: unknown }> }>('POST', '/v1/tools', {
      body: definition,
    });
    expect(saved.status, saved.text).toBe(201);
    expect(saved.body.steps[0]?.config).toMatchObject(definition.steps[0]?.config as object);

    const ran = await api.call<Run>('POST', '/v1/tools/first-tasks/run', { body: { inputs: { count: 3 } } });
    expect(ran.body.status, ran.text).toBe('success');
    expect(ran.body.data).toEqual(['Ada', 'Grace', null]);
    expect(ran.body.stepResults?.[0]?.notes).toEqual([
      expect.stringMatching(/^GraphQL error beside data: User 99 not found \(at tasks\.nodes\.2\.assignee, /),
    ]);
  });
});

describe('refused when saved', () => {
  it('a query that does not parse, at its line and column', async () => {
    const error = await refusal(
      tool('broken', { graphql: { query: '{\n  tasks(first: 2) {\n    nodes { id\n}' } }),
    );
    expect(error.issues).toEqual([
      {
        path: ['steps', 0, 'config', 'graphql', 'query'],
        message: 'the query does not parse: Syntax Error: Expected Name, found <EOF>. (line 4, column 2)',
        line: 4,
        column: 2,
      },
    ]);
    expect(error.message).toBe(
      'Invalid tool: steps[0] (q).config.graphql.query: the query does not parse: Syntax Error: Expected Name, found <EOF>. (line 4, column 2)',
    );
  });

  it('a template in the query (values go in variables) or in the operationName', async () => {
    const error = await refusal(
      tool('injectable', { graphql: { query: '{ task(id: "<<id>>") { title } }' } }),
    );
    expect(error.issues).toEqual([
      {
        path: ['steps', 0, 'config', 'graphql', 'query'],
        message:
          'template expressions are not allowed in a GraphQL query (<<id>>): the substituted text would become ' +
          'GraphQL (an injection); declare a variable and give its value in variables, e.g. query ($id: ID!) ' +
          '{ task(id: $id) { title } } with "variables": {"id": "<<id>>"}',
      },
    ]);
    const named = await api.call<ErrorBody>('POST', '/v1/tools', {
      body: tool('named', { graphql: { query: 'query T { echo(text: "x") }', operationName: 'T<<n>>' } }),
    });
    expect(named.status).toBe(400);
    expect(named.body.error.message).toContain(
      'steps[0].config.graphql.operationName: must be a GraphQL name: a letter or "_", then letters, digits or "_"',
    );
  });

  it('an operationName the query does not hold, or none for a query of several operations', async () => {
    const query = 'query A { echo(text: "a") }\nquery B { echo(text: "b") }';
    const unknown = await refusal(tool('unknown-op', { graphql: { query, operationName: 'C' } }));
    expect(unknown.issues).toEqual([
      {
        path: ['steps', 0, 'config', 'graphql', 'operationName'],
        message: "'C' is not an operation of the query (it holds A, B)",
      },
    ]);
    const unnamed = await refusal(tool('which-op', { graphql: { query } }));
    expect(unnamed.issues?.[0]?.message).toBe(
      'the query holds 2 operations (A, B): set operationName to the one to run',
    );
  });

  it('a method other than POST, a body beside graphql, a URL of another protocol, schema language', async () => {
    const error = await refusal({
      id: 'misfit',
      steps: [
        { id: 'get', config: { url: `${server.url}/graphql`, graphql: { query: '{ echo(text: "x") }' } } },
        {
          id: 'both',
          config: {
            url: `${server.url}/graphql`,
            method: 'POST',
            body: { query: '{ x }' },
            graphql: { query: '{ echo(text: "x") }' },
          },
        },
        {
          id: 'sql',
          config: {
            url: 'postgres://db.example/app',
            method: 'POST',
            graphql: { query: '{ echo(text: "x") }' },
          },
        },
        {
          id: 'sdl',
          config: { url: `${server.url}/graphql`, method: 'POST', graphql: { query: 'type Q { a: Int }' } },
        },
      ],
    });
    expect(error.issues?.map((issue) => [issue.path.join('.'), issue.message])).toEqual([
      [
        'steps.0.config.method',
        'a GraphQL step is sent as POST with a JSON body, not GET: set "method": "POST"',
      ],
      [
        'steps.1.config.body',
        'a GraphQL step sends {query, variables, operationName} of config.graphql as its body: remove body',
      ],
      ['steps.2.config.graphql', "GraphQL is sent over HTTP(S); this step's URL is postgres://"],
      [
        'steps.3.config.graphql.query',
        'the query holds a object type definition (schema language): a step sends operations (query, mutation)',
      ],
    ]);
  });

  it('a mutation without modify: true', async () => {
    const error = await refusal(
      tool('adds', { graphql: { query: 'mutation Add { addTask(title: "x") { id } }' } }),
    );
    expect(error.issues).toEqual([
      {
        path: ['steps', 0, 'modify'],
        message:
          'operation Add is a mutation: set "modify": true on the step (a step with modify false is retried ' +
          'after a failed attempt, and a mutation sent twice may change data twice)',
      },
    ]);
    const saved = await api.call('POST', '/v1/tools', {
      body: tool(
        'adds',
        { graphql: { query: 'mutation Add { addTask(title: "x") { id } }' } },
        { modify: true },
      ),
    });
    expect(saved.status, saved.text).toBe(201);
  });

  it('a subscription: a step sends one request and reads one answer', async () => {
    const error = await refusal(
      tool('listens', { graphql: { query: 'subscription Added { taskAdded { id } }' } }),
    );
    expect(error.issues).toEqual([
      {
        path: ['steps', 0, 'config', 'graphql', 'query'],
        message:
          'operation Added is a subscription: a step sends one request and reads one answer (queries and mutations only)',
      },
    ]);
  });

  it('variables the operation does not declare, and required ones not given', async () => {
    const error = await refusal(
      tool('variables', {
        graphql: { query: 'query One($id: ID!) { task(id: $id) { title } }', variables: { Id: '1' } },
      }),
    );
    expect(error.issues?.map((issue) => [issue.path.slice(2).join('.'), issue.message])).toEqual([
      ['config.graphql.variables.Id', '$Id is not a variable of operation One (it declares $id)'],
      ['config.graphql.variables', 'operation One requires $id (ID!): give it in variables'],
    ]);
  });

  it('cursor pagination whose cursor variable the operation does not declare', async () => {
    const error = await refusal(
      tool('pages', {
        graphql: { query: '{ tasks(first: 5) { nodes { id } pageInfo { endCursor hasNextPage } } }' },
        pagination: { type: 'cursorBased' },
      }),
    );
    expect(error.issues).toEqual([
      {
        path: ['steps', 0, 'config', 'pagination'],
        message:
          'the cursor goes in $after, which the anonymous operation does not declare: declare it and pass it to ' +
          'the paginated field (query ($after: String) { items(after: $after) { … } }), or set ' +
          'pagination.cursorVariable to the variable that takes the cursor',
      },
    ]);
    const plain = await refusal({
      id: 'not-graphql',
      steps: [
        {
          id: 'q',
          config: {
            url: `${server.url}/items`,
            queryParams: { after: '<<cursor>>' },
            pagination: { type: 'cursorBased', cursorPath: 'next', connectionPath: 'items' },
          },
        },
      ],
    });
    expect(plain.issues?.[0]?.message).toBe('connectionPath applies to GraphQL steps (config.graphql) only');
  });
});
