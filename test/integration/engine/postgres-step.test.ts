import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  closePostgresPools,
  executePostgresStep,
  openPostgresPoolCount,
  PostgresStepError,
} from '../../../engine/protocols/postgres.ts';
import { stepCaller, stepRejection } from '../../support/connection-step.ts';
import { useTestDatabase } from '../../support/database.ts';
import { standIn } from '../../support/fixture.ts';

const database = useTestDatabase();
const admin = standIn(() => database.client);

beforeAll(async () => {
  await admin.query('CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL)');
  await admin.query("INSERT INTO items (name) VALUES ('first')");
  await admin.query(
    "DO $$ BEGIN CREATE ROLE step_user LOGIN PASSWORD 'pw-SECRET-123'; EXCEPTION WHEN duplicate_object THEN NULL; END $$",
  );
  await admin.query('GRANT SELECT ON items TO step_user');
});

afterAll(async () => {
  await closePostgresPools();
});

const step = stepCaller(executePostgresStep, () => ({ url: database.url }));
const rejection = (promise: Promise<unknown>) => stepRejection(promise, PostgresStepError);

async function itemCount(): Promise<number> {
  const result = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM items');
  return result.rows[0]?.n ?? -1;
}

function withUserinfo(url: string, userinfo: string): string {
  return url.replace('postgres://postgres@', `postgres://${userinfo}@`);
}

describe('request bodies', () => {
  it('binds params positionally', async () => {
    const rows = await step({
      query: 'SELECT $1::int + $2::int AS sum, $3::text AS label',
      params: [2, 3, "o'k"],
    });
    expect(rows).toEqual([{ sum: 5, label: "o'k" }]);
  });

  it('accepts values as an alias of params', async () => {
    expect(await step({ query: 'SELECT $1::text AS v', values: ['x'] })).toEqual([{ v: 'x' }]);
  });

  it('accepts the body as a JSON string', async () => {
    expect(await step('{"query": "SELECT $1::int AS n", "params": [7]}')).toEqual([{ n: 7 }]);
  });

  it('runs a plain SQL string', async () => {
    expect(await step('SELECT name FROM items ORDER BY id LIMIT 1')).toEqual([{ name: 'first' }]);
  });

  it('refuses a body with both params and values, or no query', async () => {
    const both = await rejection(step({ query: 'SELECT 1', params: [], values: [] }));
    expect(both.kind).toBe('invalid-request');
    expect(both.message).toContain('either params or values');
    const none = await rejection(step({ sql: 'SELECT 1' }));
    expect(none.message).toMatch(/query/);
    expect((await rejection(step(42))).kind).toBe('invalid-request');
  });

  it('runs exactly one statement, so nothing can be appended to the SQL', async () => {
    const error = await rejection(step("COMMIT; INSERT INTO items (name) VALUES ('smuggled')"));
    expect(error.kind).toBe('sql');
    expect(error.message).toContain('multiple commands');
    expect(await itemCount()).toBe(1);
  });
});

describe('transactions', () => {
  it('refuses an INSERT in a modify: false step, saying why', async () => {
    const error = await rejection(step({ query: 'INSERT INTO items (name) VALUES ($1)', params: ['nope'] }));
    expect(error.kind).toBe('read-only');
    expect(error.code).toBe('25006');
    expect(error.message).toContain('cannot execute INSERT in a read-only transaction');
    expect(error.message).toContain('modify: false');
    expect(await itemCount()).toBe(1);
  });

  it('does not let the statement switch the transaction to read-write', async () => {
    const error = await rejection(step('SET TRANSACTION READ WRITE'));
    expect(error.message).toContain('must be set before any query');
  });

  it('commits an INSERT in a modify: true step', async () => {
    const rows = await step(
      { query: 'INSERT INTO items (name) VALUES ($1) RETURNING id, name', params: ['second'] },
      { modify: true },
    );
    expect(rows).toEqual([{ id: 2, name: 'second' }]);
    expect(await itemCount()).toBe(2);
    await admin.query('DELETE FROM items WHERE id = 2');
  });

  it('rolls back a failed modify: true step', async () => {
    await rejection(
      step(
        {
          query: "WITH ins AS (INSERT INTO items (name) VALUES ('ghost') RETURNING id) SELECT 1 / 0 FROM ins",
        },
        { modify: true },
      ),
    );
    expect(await itemCount()).toBe(1);
  });

  it('does not carry session settings into the next step on the same connection', async () => {
    await step("SELECT set_config('search_path', 'nowhere', false)");
    expect(await step('SHOW search_path')).toEqual([{ search_path: '"$user", public' }]);
  });
});

describe('time limits and abort', () => {
  it('fails a statement that outlives the run deadline with a timeout error', async () => {
    const error = await rejection(step('SELECT pg_sleep(5)', { deadline: Date.now() + 500 }));
    expect(error.kind).toBe('timeout');
    expect(error.message).toContain('timed out');
  });

  it('fails at once when the deadline has passed', async () => {
    const error = await rejection(step('SELECT 1', { deadline: Date.now() - 1 }));
    expect(error.kind).toBe('timeout');
  });

  it('cancels the running statement on abort and keeps the pool usable', async () => {
    const controller = new AbortController();
    const pending = step('SELECT pg_sleep(30) AS abort_me', { signal: controller.signal });
    // Abort once the statement is really running on the server.
    for (let i = 0; i < 100; i++) {
      const active = await admin.query(
        "SELECT 1 FROM pg_stat_activity WHERE query LIKE '%AS abort_me' AND pid <> pg_backend_pid()",
      );
      if (active.rowCount) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    controller.abort();
    const error = await rejection(pending);
    expect(error.kind).toBe('aborted');
    expect(error.message).toBe('Postgres query was aborted');

    let stillRunning = 1;
    for (let i = 0; i < 100 && stillRunning > 0; i++) {
      const active = await admin.query(
        "SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%AS abort_me' AND pid <> pg_backend_pid()",
      );
      stillRunning = active.rowCount ?? 0;
      if (stillRunning) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(stillRunning).toBe(0);
    expect(await step('SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
  });
});

describe('pools', () => {
  it('reuses a pooled connection across steps instead of connecting per step', async () => {
    await step('SELECT 1');
    const poolsBefore = openPostgresPoolCount();
    const pids = new Set<unknown>();
    for (let i = 0; i < 5; i++) {
      const rows = (await step('SELECT pg_backend_pid() AS pid')) as Array<{ pid: number }>;
      pids.add(rows[0]?.pid);
    }
    expect(pids.size).toBe(1);
    expect(openPostgresPoolCount()).toBe(poolsBefore);
  });
});

describe('credentials and errors', () => {
  it('takes the user from the URL, else from the credentials', async () => {
    const fromUrl = await step('SELECT current_user AS who', {
      url: withUserinfo(database.url, 'step_user:pw-SECRET-123'),
    });
    expect(fromUrl).toEqual([{ who: 'step_user' }]);
    const fromCredentials = await step('SELECT current_user AS who', {
      url: database.url.replace('postgres://postgres@', 'postgres://'),
      credentials: { username: 'step_user', password: 'pw-SECRET-123' },
    });
    expect(fromCredentials).toEqual([{ who: 'step_user' }]);
  });

  it('reports the SQL error and code but never the password', async () => {
    const error = await rejection(
      step(
        { query: "SELECT 'pw-SECRET-123'::int" },
        { url: withUserinfo(database.url, 'step_user:pw-SECRET-123') },
      ),
    );
    expect(error.kind).toBe('sql');
    expect(error.code).toBe('22P02');
    expect(error.message).toMatch(/^Postgres error 22P02: invalid input syntax for type integer/);
    expect(error.message).not.toContain('SECRET');
  });

  it('reports a connection failure without the password', async () => {
    const closedPort = new URL(database.url);
    closedPort.port = '1';
    closedPort.username = 'step_user';
    closedPort.password = 'pw-SECRET-123';
    const error = await rejection(step('SELECT 1', { url: closedPort.toString() }));
    expect(error.kind).toBe('connection');
    expect(error.message).toContain('ECONNREFUSED');
    expect(error.message).not.toContain('SECRET');
  });

  it('honours sslmode: require fails against a server without TLS, prefer falls back', async () => {
    const url = new URL(database.url);
    url.searchParams.set('sslmode', 'require');
    const error = await rejection(step('SELECT 1', { url: url.toString() }));
    expect(error.kind).toBe('connection');
    expect(error.message).toContain('does not support SSL');
    url.searchParams.set('sslmode', 'prefer');
    expect(await step('SELECT 1 AS ok', { url: url.toString() })).toEqual([{ ok: 1 }]);
    url.searchParams.set('sslmode', 'sometimes');
    expect((await rejection(step('SELECT 1', { url: url.toString() }))).kind).toBe('invalid-request');
  });
});

describe('result values', () => {
  it('maps Postgres types to JSON values', async () => {
    const rows = await step(`SELECT
      42::int8 AS small_bigint,
      9007199254740993::int8 AS big_bigint,
      12.50::numeric AS price,
      123456789.123456789::numeric AS precise,
      '2024-01-02 03:04:05.678+02'::timestamptz AS at,
      '2024-01-02 03:04:05.123456'::timestamp AS local_at,
      '2024-01-02'::date AS day,
      '1 hour 30 minutes'::interval AS span,
      '\\x0102ff'::bytea AS bytes,
      '{"a":[1,null]}'::jsonb AS doc,
      ARRAY['2024-01-02'::date, NULL] AS days,
      ARRAY[1::int8, 2] AS ids,
      NULL::text AS nothing,
      true AS yes`);
    expect(rows).toEqual([
      {
        small_bigint: 42,
        big_bigint: '9007199254740993',
        price: 12.5,
        precise: '123456789.123456789',
        at: '2024-01-02T01:04:05.678Z',
        local_at: '2024-01-02T03:04:05.123456',
        day: '2024-01-02',
        span: '01:30:00',
        bytes: Buffer.from([1, 2, 255]).toString('base64'),
        doc: { a: [1, null] },
        days: ['2024-01-02', null],
        ids: [1, 2],
        nothing: null,
        yes: true,
      },
    ]);
  });

  it('returns an empty array for a statement without rows', async () => {
    expect(await step({ query: 'UPDATE items SET name = name WHERE id = -1' }, { modify: true })).toEqual([]);
  });
});
