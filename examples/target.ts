/**
 * The example target: a small HTTP API on localhost that the README's walkthrough and docs/tools.md call,
 * so every example runs offline. `npm run example-target` starts it on http://127.0.0.1:8090
 * (`npm run example-target -- 0` picks a free port). Only node:http: nothing here is kubeglue.
 *
 *   GET  /todos            every todo; ?done=true|false, ?userId=; pages by ?offset=&limit= or ?page=&pageSize=
 *   GET  /todos/feed       cursor pages: ?cursor=&limit= → {items, next} (next is null on the last page)
 *   GET  /todos/{id}       one todo, 404 for an unknown id
 *   POST /todos            "creates" a todo: 201 with the body and a new id (nothing is kept)
 *   GET  /users            the users; GET /users/{id} one of them
 *   GET  /me               who the bearer token is: 401 without `Authorization: Bearer demo-token`
 *   *    /echo             what was received: method, url (path and query as sent), headers, body
 *   GET  /identity?issuer= verifies the `Authorization: Bearer` JWT a kubeglue at `issuer` signed (its JWKS,
 *                          iss, aud = this origin, exp) and answers its claims (docs/operations.md)
 *   GET  /slow?seconds=n   answers after n seconds (default 30): a run long enough to cancel
 *   GET  /report.csv       a CSV file; GET /logo.png a binary file
 *   GET  /status/{code}    answers with that HTTP status
 */
import { createPublicKey, type JsonWebKey, verify } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const DEFAULT_PORT = 8090;
export const DEMO_TOKEN = 'demo-token';

const USERS = [
  { id: 1, name: 'Ada' },
  { id: 2, name: 'Grace' },
  { id: 3, name: 'Alan' },
];

const TITLES = [
  'water the plants',
  'write the report',
  'book the train',
  'call the bank',
  'fix the bike',
  'read chapter 3',
  'plan the sprint',
  'renew the passport',
  'buy coffee',
  'answer the mail',
  'back up the laptop',
  'clean the desk',
];
const TODOS = TITLES.map((title, index) => ({
  id: index + 1,
  userId: (index % USERS.length) + 1,
  title,
  done: index % 3 === 0,
}));

// The smallest valid PNG: one transparent pixel.
const LOGO = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
);

type Reply = { status?: number; body: unknown; type?: string; headers?: Record<string, string> };

function intParam(query: URLSearchParams, name: string): number | undefined {
  const value = query.get(name);
  return value === null || value === '' ? undefined : Number(value);
}

/** The todos a query asks for: filtered, then one page when it names one. */
function todos(query: URLSearchParams): unknown[] {
  let list = TODOS.filter(
    (todo) =>
      (query.get('done') === null || String(todo.done) === query.get('done')) &&
      (query.get('userId') === null || String(todo.userId) === query.get('userId')),
  );
  const limit = intParam(query, 'limit');
  const pageSize = intParam(query, 'pageSize');
  if (limit !== undefined) list = list.slice(intParam(query, 'offset') ?? 0).slice(0, limit);
  else if (pageSize !== undefined) {
    const page = intParam(query, 'page') ?? 1;
    list = list.slice((page - 1) * pageSize, page * pageSize);
  }
  return list;
}

/** Cursor pages: the cursor is the id of the next todo to send, as an opaque string. */
function feed(query: URLSearchParams): unknown {
  const limit = intParam(query, 'limit') ?? 5;
  const start = query.get('cursor') ? Number(query.get('cursor')?.slice(1)) - 1 : 0;
  const items = TODOS.slice(start, start + limit);
  const next = start + limit < TODOS.length ? `c${start + limit + 1}` : null;
  return { items, next };
}

function wait(seconds: number, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, seconds * 1000);
    res.once('close', done);
    function done(): void {
      clearTimeout(timer);
      resolve();
    }
  });
}

function decodePart(part: string | undefined): Record<string, unknown> {
  try {
    return JSON.parse(Buffer.from(part ?? '', 'base64url').toString('utf8'));
  } catch {
    return {};
  }
}

/**
 * What a service that receives kubeglue's identity tokens does: the signature by a key of the issuer's JWKS
 * (ES256), the issuer, the audience (this origin) and the expiry. A real service pins its issuer; this
 * one takes it from the query, as a demonstration.
 */
async function verifyIdentity(req: IncomingMessage, url: URL): Promise<Reply> {
  const issuer = url.searchParams.get('issuer');
  const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (!issuer || !token) {
    return { status: 400, body: { error: 'send ?issuer=<kubeglue URL> and Authorization: Bearer <token>' } };
  }
  const [head, payload, signature] = token.split('.');
  const header = decodePart(head);
  const claims = decodePart(payload);
  const jwks = (await (await fetch(`${issuer}/.well-known/jwks.json`)).json()) as {
    keys: Array<JsonWebKey & { kid?: string }>;
  };
  const jwk = jwks.keys.find((key) => key.kid === header.kid);
  const problems: string[] = [];
  const signed =
    header.alg === 'ES256' &&
    jwk !== undefined &&
    verify(
      'sha256',
      Buffer.from(`${head}.${payload}`),
      { key: createPublicKey({ key: jwk, format: 'jwk' }), dsaEncoding: 'ieee-p1363' },
      Buffer.from(signature ?? '', 'base64url'),
    );
  if (!signed) problems.push('signature');
  if (claims.iss !== issuer) problems.push('issuer');
  if (claims.aud !== `http://${req.headers.host}`) problems.push('audience');
  const now = Date.now() / 1000;
  const { exp, iat } = claims as { exp?: number; iat?: number };
  if (exp === undefined || iat === undefined || exp <= now || exp - iat > 300) problems.push('expiry');
  if (problems.length > 0) return { status: 401, body: { verified: false, problems } };
  return { body: { verified: true, kid: header.kid, claims } };
}

async function route(req: IncomingMessage, res: ServerResponse, text: string): Promise<Reply> {
  const url = new URL(req.url ?? '/', 'http://target');
  const [, first, second] = url.pathname.split('/');
  const method = req.method ?? 'GET';
  if (first === 'identity' && method === 'GET') return verifyIdentity(req, url);
  if (first === 'echo') {
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(
        ([name]) => ['authorization', 'content-type'].includes(name) || name.startsWith('x-'),
      ),
    );
    let body: unknown = text || null;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: echoed as text
    }
    return {
      body: { method, url: req.url, headers, body },
    };
  }
  if (method === 'POST' && first === 'todos' && !second) {
    return { status: 201, body: { id: TODOS.length + 1, done: false, ...JSON.parse(text || '{}') } };
  }
  if (method !== 'GET')
    return { status: 405, body: { error: `${method} is not allowed on ${url.pathname}` } };
  if (first === 'todos' && !second) return { body: todos(url.searchParams) };
  if (first === 'todos' && second === 'feed') return { body: feed(url.searchParams) };
  if (first === 'users' && !second) return { body: USERS };
  if (first === 'todos' || first === 'users') {
    const found = (first === 'todos' ? TODOS : USERS).find((item) => String(item.id) === second);
    return found
      ? { body: found }
      : { status: 404, body: { error: `${first.slice(0, -1)} ${second} not found` } };
  }
  if (first === 'me') {
    return req.headers.authorization === `Bearer ${DEMO_TOKEN}`
      ? { body: { user: 'demo', scopes: ['todos:read'] } }
      : { status: 401, body: { error: `send Authorization: Bearer ${DEMO_TOKEN}` } };
  }
  if (first === 'slow') {
    const seconds = intParam(url.searchParams, 'seconds') ?? 30;
    await wait(seconds, res);
    return { body: { waited: seconds } };
  }
  if (first === 'report.csv') {
    const rows = TODOS.slice(0, 3).map((t) => `${t.id},${t.title},${t.done}`);
    return { body: ['id,title,done', ...rows].join('\n'), type: 'text/csv' };
  }
  if (first === 'logo.png') return { body: LOGO, type: 'image/png' };
  if (first === 'status' && second) return { status: Number(second), body: { status: Number(second) } };
  return { status: 404, body: { error: `no route for ${method} ${url.pathname}` } };
}

function send(res: ServerResponse, reply: Reply): void {
  if (res.destroyed) return;
  const raw = typeof reply.body === 'string' || Buffer.isBuffer(reply.body);
  const payload = raw ? (reply.body as string | Buffer) : JSON.stringify(reply.body);
  res.writeHead(reply.status ?? 200, {
    'content-type': reply.type ?? 'application/json',
    ...reply.headers,
  });
  res.end(payload);
}

/** Starts the target; port 0 picks a free one. */
export async function startExampleTarget(port = DEFAULT_PORT): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      route(req, res, Buffer.concat(chunks).toString('utf8'))
        .then((reply) => send(res, reply))
        .catch((error: unknown) => send(res, { status: 400, body: { error: (error as Error).message } }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

if (import.meta.main) {
  const { url } = await startExampleTarget(Number(process.argv[2] ?? DEFAULT_PORT));
  console.log(`example target listening on ${url} (Ctrl-C stops it)`);
}
