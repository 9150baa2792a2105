/**
 * A real GraphQL server for tests and for docs/graphql.md's examples: graphql-js executes a small task
 * tracker's schema and graphql-http serves it (the GraphQL-over-HTTP protocol: POST with a JSON body, GET
 * for queries, application/graphql-response+json answers), introspection on. What it offers:
 * - `tasks(first, after, done)`: a Relay cursor connection (`edges`, `nodes`, `pageInfo { endCursor
 *   hasNextPage }`, `totalCount`) over 12 tasks; task 3's assignee is unknown, so asking for `assignee`
 *   on it answers data with an error at that path (a partial error, extensions.code NOT_FOUND);
 * - `task(id)`: non-null, so an unknown id nulls the whole answer (`data: null` and the error, HTTP 200);
 * - `echo(text)`, `slow(ms)`, `fail(message)` (always an error, beside the rest of the data); the mutation
 *   `addTask(title)`;
 * - `Authorization: Bearer <token>` on every request, else 401 with a GraphQL error (UNAUTHENTICATED);
 * - `/schema.graphql`: the schema as SDL (no token), for documentation fetched as a file.
 * The endpoint is `/graphql` (and `/api`, for an endpoint whose path does not say GraphQL); `/moved`
 * answers 308 to it.
 *
 * `npm run example-graphql` starts it on http://127.0.0.1:8091 (docs/graphql.md; `-- 0`: any free port).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';

// Both through Node's own resolution: vitest resolves a test's imports with the "development" condition,
// which picks graphql's development build, while graphql-http (loaded by Node) gets the production one,
// and a schema of one is refused by the other.
const require = createRequire(import.meta.url);
const { buildSchema, GraphQLError } = require('graphql') as typeof import('graphql');
const { createHandler } = require('graphql-http') as typeof import('graphql-http');

export const DEFAULT_PORT = 8091;
export const GRAPHQL_TOKEN = 'tracker-token-7f3a';

export const SCHEMA_SDL = `"""A task of the tracker."""
type Task {
  id: ID!
  title: String!
  done: Boolean!
  """Who works on the task; an error when the user is unknown (task 3's)."""
  assignee: User
}

"""A person tasks are assigned to."""
type User {
  id: ID!
  name: String!
}

type TaskEdge {
  cursor: String!
  node: Task!
}

"""Where a page of a connection ends (Relay)."""
type PageInfo {
  startCursor: String
  endCursor: String
  hasPreviousPage: Boolean!
  hasNextPage: Boolean!
}

"""Tasks a page at a time (a Relay cursor connection)."""
type TaskConnection {
  edges: [TaskEdge!]!
  nodes: [Task!]!
  pageInfo: PageInfo!
  totalCount: Int!
}

type Query {
  """Tasks, oldest first, \`first\` at a time after the cursor \`after\`; \`done\` filters."""
  tasks(first: Int = 10, after: String, done: Boolean): TaskConnection!
  """The task with this id; an unknown id is an error (NOT_FOUND)."""
  task(id: ID!): Task!
  """The text it was given, unchanged."""
  echo(text: String!): String!
  """Answers after \`ms\` milliseconds."""
  slow(ms: Int!): Boolean!
  """Always an error with this message (code FAILED): a field that fails as asked."""
  fail(message: String!): String
}

type Mutation {
  """Adds a task (not done, unassigned) and returns it."""
  addTask(title: String!): Task!
}
`;

interface TaskRow {
  id: number;
  title: string;
  done: boolean;
  assigneeId: number | null;
}

const USERS = new Map([
  [1, 'Ada'],
  [2, 'Grace'],
]);

const TITLES = [
  'water the plants',
  'write the report',
  'fix the bike',
  'book the train',
  'read chapter 3',
  'call the plumber',
  'renew the passport',
  'back up the laptop',
  'plan the trip',
  'sort the photos',
  'pay the rent',
  'answer the letters',
];

function initialTasks(): TaskRow[] {
  return TITLES.map((title, index) => ({
    id: index + 1,
    title,
    done: index % 3 === 0,
    assigneeId: index === 2 ? 99 : (index % 2) + 1,
  }));
}

const cursorOf = (id: number) => Buffer.from(`task:${id}`).toString('base64');
const idOf = (cursor: string) => Number(Buffer.from(cursor, 'base64').toString('utf8').replace('task:', ''));

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** The parsed JSON body of a POST (undefined otherwise). */
  body: unknown;
}

export interface GraphqlServer {
  /** `http://127.0.0.1:<port>`; the endpoint is `${url}/graphql`. */
  url: string;
  endpoint: string;
  server: Server;
  /** Every request, in arrival order. */
  requests: ReceivedRequest[];
  /** How many tasks exist (the mutation adds some). */
  taskCount(): number;
  /** The next `count` requests to the endpoint are answered 503 (a server that recovers). */
  failNext(count: number): void;
  stop(): Promise<void>;
}

function taskObject(row: TaskRow) {
  return {
    id: String(row.id),
    title: row.title,
    done: row.done,
    assignee: () => {
      if (row.assigneeId === null) return null;
      const name = USERS.get(row.assigneeId);
      if (!name) {
        throw new GraphQLError(`User ${row.assigneeId} not found`, { extensions: { code: 'NOT_FOUND' } });
      }
      return { id: String(row.assigneeId), name };
    },
  };
}

function authorized(req: IncomingMessage, token: string): boolean {
  return req.headers.authorization === `Bearer ${token}`;
}

/** Starts the server; port 0 picks a free one. */
export async function startGraphqlServer(
  options: { port?: number; token?: string } = {},
): Promise<GraphqlServer> {
  const token = options.token ?? GRAPHQL_TOKEN;
  const schema = buildSchema(SCHEMA_SDL);
  const tasks = initialTasks();
  const requests: ReceivedRequest[] = [];
  let failures = 0;

  const rootValue = {
    tasks: ({ first, after, done }: { first: number; after?: string | null; done?: boolean | null }) => {
      const matching = tasks.filter((task) => done === undefined || done === null || task.done === done);
      const start = after ? matching.findIndex((task) => task.id === idOf(after)) + 1 : 0;
      const page = matching.slice(start, start + Math.max(0, first));
      const last = page.at(-1);
      return {
        edges: page.map((task) => ({ cursor: cursorOf(task.id), node: taskObject(task) })),
        nodes: page.map(taskObject),
        totalCount: matching.length,
        pageInfo: {
          startCursor: page[0] ? cursorOf(page[0].id) : null,
          endCursor: last ? cursorOf(last.id) : null,
          hasPreviousPage: start > 0,
          hasNextPage: start + page.length < matching.length,
        },
      };
    },
    task: ({ id }: { id: string }) => {
      const row = tasks.find((task) => String(task.id) === id);
      if (!row) throw new GraphQLError(`Task ${id} not found`, { extensions: { code: 'NOT_FOUND' } });
      return taskObject(row);
    },
    echo: ({ text }: { text: string }) => text,
    fail: ({ message }: { message: string }) => {
      throw new GraphQLError(message, { extensions: { code: 'FAILED' } });
    },
    slow: async ({ ms }: { ms: number }) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return true;
    },
    addTask: ({ title }: { title: string }) => {
      const row = { id: tasks.length + 1, title, done: false, assigneeId: null };
      tasks.push(row);
      return taskObject(row);
    },
  };
  const graphql = createHandler({ schema, rootValue });

  const server = createServer((req, res) => {
    const path = ((req.url ?? '/').split('?')[0] ?? '/').replace(/(.)\/+$/, '$1');
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = text;
      }
      requests.push({ method: req.method ?? '', path, headers: req.headers, body });
      if (path === '/moved') {
        res.writeHead(308, { location: '/graphql' }).end();
        return;
      }
      if (path === '/schema.graphql') {
        res.writeHead(200, { 'content-type': 'application/graphql; charset=utf-8' }).end(SCHEMA_SDL);
        return;
      }
      if (path !== '/graphql' && path !== '/api') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      if (failures > 0) {
        failures -= 1;
        res.writeHead(503, { 'content-type': 'text/plain' }).end('busy, try again');
        return;
      }
      if (!authorized(req, token)) {
        res.writeHead(401, { 'content-type': 'application/graphql-response+json; charset=utf-8' });
        res.end(
          JSON.stringify({
            errors: [{ message: 'missing or wrong bearer token', extensions: { code: 'UNAUTHENTICATED' } }],
          }),
        );
        return;
      }
      graphql({
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: req.headers,
        body: text,
        raw: req,
        context: undefined,
      })
        .then(([answer, init]) => {
          res.writeHead(init.status, init.statusText, init.headers).end(answer);
        })
        .catch((error: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
        });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    endpoint: `${url}/graphql`,
    server,
    requests,
    taskCount: () => tasks.length,
    failNext: (count) => {
      failures = count;
    },
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (import.meta.main) {
  const { endpoint } = await startGraphqlServer({ port: Number(process.argv[2] ?? DEFAULT_PORT) });
  console.log(`GraphQL server at ${endpoint}, bearer token ${GRAPHQL_TOKEN} (Ctrl-C stops it)`);
}
