/**
 * MySQL/MariaDB steps against the run's real MariaDB (test/support/mariadb.ts): bodies and binding,
 * result shapes and types, read-only transactions, the deadline and cancellation on the server, the data
 * bound, pools, credentials, TLS, the egress guard and the errors a user reads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressGuard } from '../../../engine/protocols/egress-policy.ts';
import {
  closeMysqlPools,
  executeMysqlStep,
  MysqlStepError,
  openMysqlPoolCount,
} from '../../../engine/protocols/mysql.ts';
import { stepCaller, stepRejection } from '../../support/connection-step.ts';
import { useStarted } from '../../support/fixture.ts';
import {
  createMariaDbDatabase,
  dropMariaDbDatabase,
  mariadbSkip,
  startTestMariaDb,
  useMariaDb,
} from '../../support/mariadb.ts';

describe.skipIf(mariadbSkip())('MySQL steps on MariaDB', () => {
  const database = useMariaDb();

  beforeAll(async () => {
    await database.admin.query(`
      CREATE TABLE items (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100) NOT NULL);
      INSERT INTO items (name) VALUES ('first');
      CREATE TABLE accounts (id VARCHAR(10) PRIMARY KEY, owner VARCHAR(50) NOT NULL);
      INSERT INTO accounts VALUES ('a1', 'ada'), ('a2', 'linus');`);
  });

  afterAll(async () => {
    await closeMysqlPools();
  });

  const step = stepCaller(executeMysqlStep, () => ({ url: database.url }));
  const rejection = (promise: Promise<unknown>) => stepRejection(promise, MysqlStepError);

  async function itemCount(): Promise<number> {
    const [rows] = await database.admin.query('SELECT COUNT(*) AS n FROM items');
    return Number((rows as Array<{ n: number }>)[0]?.n);
  }

  /** Statements of this database's user the server is running now (the processlist). */
  async function running(marker: string): Promise<number> {
    const [rows] = await database.admin.query(
      "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND COMMAND <> 'Sleep' AND ID <> CONNECTION_ID()",
      [`%${marker}%`],
    );
    return Number((rows as Array<{ n: number }>)[0]?.n);
  }

  async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  describe('request bodies', () => {
    it('binds params positionally as values, never as SQL', async () => {
      expect(await step({ query: 'SELECT ? + ? AS sum, ? AS label', params: [2, 3, "o'k"] })).toEqual([
        { sum: 5, label: "o'k" },
      ]);
      const injected = await step({
        query: 'SELECT id FROM accounts WHERE owner = ?',
        params: ["nobody' OR '1'='1"],
      });
      expect(injected).toEqual([]);
    });

    it('accepts values as an alias of params, the body as JSON text, and plain SQL', async () => {
      expect(await step({ query: 'SELECT ? AS v', values: ['x'] })).toEqual([{ v: 'x' }]);
      expect(await step('{"query": "SELECT ? AS n", "params": [7]}')).toEqual([{ n: 7 }]);
      expect(await step('SELECT name FROM items ORDER BY id LIMIT 1')).toEqual([{ name: 'first' }]);
    });

    it('refuses a body that is not a query, naming the placeholder form', async () => {
      const none = await rejection(step({ sql: 'SELECT 1' }));
      expect(none.kind).toBe('invalid-request');
      expect(none.message).toContain('Invalid MySQL step body');
      expect(none.message).toContain('"query": "... ? ..."');
      const both = await rejection(step({ query: 'SELECT 1', params: [], values: [] }));
      expect(both.message).toContain('either params or values');
      expect((await rejection(step(42))).kind).toBe('invalid-request');
    });

    it('runs exactly one statement, so nothing can be appended to the SQL', async () => {
      const error = await rejection(
        step("SELECT 1; INSERT INTO items (name) VALUES ('smuggled')", { modify: true }),
      );
      expect(error.kind).toBe('sql');
      expect(error.code).toBe('ER_PARSE_ERROR');
      expect(await itemCount()).toBe(1);
    });
  });

  describe('results', () => {
    it('answers a write with affectedRows and insertId', async () => {
      const inserted = await step(
        { query: 'INSERT INTO items (name) VALUES (?), (?)', params: ['second', 'third'] },
        { modify: true },
      );
      expect(inserted).toEqual({ affectedRows: 2, insertId: expect.any(Number), warnings: 0 });
      const updated = await step(
        { query: 'UPDATE items SET name = CONCAT(name, ?) WHERE id > 1', params: ['!'] },
        { modify: true },
      );
      expect(updated).toMatchObject({ affectedRows: 2 });
      expect(await step({ query: 'DELETE FROM items WHERE id > 1' }, { modify: true })).toMatchObject({
        affectedRows: 2,
      });
      expect(await itemCount()).toBe(1);
    });

    it("answers rows for MariaDB's INSERT … RETURNING", async () => {
      const rows = await step(
        { query: 'INSERT INTO items (name) VALUES (?) RETURNING id, name', params: ['returned'] },
        { modify: true },
      );
      expect(rows).toEqual([{ id: expect.any(Number), name: 'returned' }]);
      await database.admin.query("DELETE FROM items WHERE name = 'returned'");
    });

    it('answers an empty array for a read without rows, and every result set of a CALL', async () => {
      expect(await step({ query: 'SELECT id FROM items WHERE id < 0' })).toEqual([]);
      await database.admin.query(
        'CREATE PROCEDURE two_sets() BEGIN SELECT 1 AS a; SELECT 2 AS b UNION SELECT 3; END',
      );
      expect(await step('CALL two_sets()')).toEqual({ resultSets: [[{ a: 1 }], [{ b: 2 }, { b: 3 }]] });
    });

    it('converts each type to JSON without losing precision', async () => {
      await database.admin.query(`
        CREATE TABLE typed (
          big BIGINT, huge BIGINT UNSIGNED, small_dec DECIMAL(10,2), big_dec DECIMAL(30,10),
          d DATE, dt DATETIME(3), ts TIMESTAMP NULL, tm TIME, y YEAR, j JSON, bl BLOB, vb VARBINARY(8),
          bits BIT(5), wide_bits BIT(64), txt TEXT, nothing INT, f DOUBLE, flag BOOLEAN, e ENUM('a','b'));
        SET time_zone = '+02:00';
        INSERT INTO typed VALUES (
          9007199254740991, 18446744073709551615, 12.34, 12345678901234567890.0123456789,
          '2024-01-02', '2024-01-02 03:04:05.678', '2024-01-02 05:04:05', '-12:34:56', 2024,
          '{"a": [1, 2], "b": null}', x'00ff10', x'0102', b'10101', x'ffffffffffffffff', 'héllo', NULL, 0.5, TRUE, 'b');
        INSERT INTO typed (big) VALUES (9007199254740993);
        SET time_zone = SYSTEM;`);
      const rows = (await step('SELECT * FROM typed ORDER BY big')) as Array<Record<string, unknown>>;
      expect(rows[0]).toEqual({
        big: 9007199254740991,
        huge: '18446744073709551615',
        small_dec: 12.34,
        big_dec: '12345678901234567890.0123456789',
        d: '2024-01-02',
        dt: '2024-01-02T03:04:05.678',
        ts: '2024-01-02T03:04:05Z',
        tm: '-12:34:56',
        y: 2024,
        j: { a: [1, 2], b: null },
        bl: Buffer.from([0x00, 0xff, 0x10]).toString('base64'),
        vb: Buffer.from([0x01, 0x02]).toString('base64'),
        bits: 21,
        wide_bits: '18446744073709551615',
        txt: 'héllo',
        nothing: null,
        f: 0.5,
        flag: 1,
        e: 'b',
      });
      expect(rows[1]?.big).toBe('9007199254740993');
    });
  });

  describe('transactions', () => {
    it('refuses an INSERT in a modify: false step, saying to set modify: true', async () => {
      const error = await rejection(step({ query: 'INSERT INTO items (name) VALUES (?)', params: ['nope'] }));
      expect(error.kind).toBe('read-only');
      expect(error.code).toBe('ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION');
      expect(error.message).toContain('Cannot execute statement in a READ ONLY transaction');
      expect(error.message).toContain('set modify: true');
      expect(await itemCount()).toBe(1);
    });

    it('refuses DDL in a modify: false step, whose implicit commit would otherwise end the transaction', async () => {
      for (const ddl of ['DROP TABLE items', 'CREATE TABLE escapee (i INT)', 'TRUNCATE items']) {
        const error = await rejection(step(ddl));
        expect(error.kind).toBe('read-only');
      }
      expect(await itemCount()).toBe(1);
      const [tables] = await database.admin.query("SHOW TABLES LIKE 'escapee'");
      expect(tables).toEqual([]);
    });

    it('starts every step with its own session settings, whatever an earlier step set', async () => {
      await step('SET SESSION TRANSACTION READ WRITE');
      await step("SET time_zone = '+05:00'");
      const error = await rejection(step({ query: 'INSERT INTO items (name) VALUES (?)', params: ['nope'] }));
      expect(error.kind).toBe('read-only');
      expect(await step('SELECT @@time_zone AS tz')).toEqual([{ tz: '+00:00' }]);
    });

    it('commits a write in a modify: true step', async () => {
      await step({ query: 'INSERT INTO items (name) VALUES (?)', params: ['kept'] }, { modify: true });
      expect(await itemCount()).toBe(2);
      await database.admin.query("DELETE FROM items WHERE name = 'kept'");
    });
  });

  describe('the deadline and cancellation stop the statement on the server', () => {
    it('fails a statement that outlives the run deadline, and the server no longer runs it', async () => {
      const error = await rejection(
        step('SELECT SLEEP(30) AS deadline_marker', { deadline: Date.now() + 700 }),
      );
      expect(error.kind).toBe('timeout');
      expect(error.message).toBe(
        `MySQL query on 127.0.0.1:${database.server.port}/${database.name} timed out: the run deadline was reached`,
      );
      await until(async () => (await running('deadline_marker')) === 0, 'the server stopped the SLEEP');
    });

    it('fails at once when the deadline has passed', async () => {
      expect((await rejection(step('SELECT 1', { deadline: Date.now() - 1 }))).kind).toBe('timeout');
    });

    it('kills the running statement on cancel and keeps the pool usable', async () => {
      const controller = new AbortController();
      // BENCHMARK never looks at the client's socket: only a KILL QUERY stops it before it ends, hours later.
      const pending = step("SELECT BENCHMARK(1000000000000, MD5('x')) AS abort_marker", {
        signal: controller.signal,
      });
      await until(async () => (await running('abort_marker')) === 1, 'the statement runs on the server');
      controller.abort();
      const error = await rejection(pending);
      expect(error.kind).toBe('aborted');
      expect(error.message).toBe(
        `MySQL query on 127.0.0.1:${database.server.port}/${database.name} was aborted`,
      );
      await until(async () => (await running('abort_marker')) === 0, 'the server stopped the statement');
      expect(await step('SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
    });
  });

  it('fails past the step data bound while rows stream in, naming the setting', async () => {
    const error = await rejection(
      step(
        "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) SELECT i, REPEAT('x', 100) AS pad FROM n",
        { maxDataBytes: 10_000 },
      ),
    );
    expect(error.kind).toBe('too-large');
    expect(error.message).toContain('KUBEGLUE_MAX_STEP_DATA_BYTES');
    expect(error.message).toContain('the statement was stopped');
    expect(await step('SELECT 2 AS ok')).toEqual([{ ok: 2 }]);
  });

  describe('pools', () => {
    it('reuses a pooled connection across steps', async () => {
      // One connection in the pool (earlier tests may have left several, which steps take in turn).
      await closeMysqlPools();
      await step('SELECT 1');
      const before = openMysqlPoolCount();
      const ids = new Set<unknown>();
      for (let i = 0; i < 5; i++) {
        const rows = (await step('SELECT CONNECTION_ID() AS id')) as Array<{ id: number }>;
        ids.add(rows[0]?.id);
      }
      expect(ids.size).toBe(1);
      expect(openMysqlPoolCount()).toBe(before);
    });

    it('never shares a connection between credentials', async () => {
      await database.admin.query("CREATE USER IF NOT EXISTS 'kg_other'@'%' IDENTIFIED BY 'other-pw-1'");
      await database.admin.query(`GRANT SELECT ON ${database.name}.* TO 'kg_other'@'%'`);
      const mine = (await step('SELECT CONNECTION_ID() AS id, CURRENT_USER() AS who')) as Array<{
        id: number;
        who: string;
      }>;
      const theirs = (await step('SELECT CONNECTION_ID() AS id, CURRENT_USER() AS who', {
        url: database.bareUrl,
        credentials: { username: 'kg_other', password: 'other-pw-1' },
      })) as Array<{ id: number; who: string }>;
      expect(theirs[0]?.who).toBe('kg_other@%');
      expect(mine[0]?.who).toBe(`${database.user}@%`);
      expect(theirs[0]?.id).not.toBe(mine[0]?.id);
    });

    it('closes a connection that stays idle for 30 s', { timeout: 90_000 }, async () => {
      await closeMysqlPools();
      const rows = (await step('SELECT CONNECTION_ID() AS id')) as Array<{ id: number }>;
      const id = rows[0]?.id;
      const connected = async () => {
        const [found] = await database.admin.query(
          'SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ID = ?',
          [id],
        );
        return Number((found as Array<{ n: number }>)[0]?.n) === 1;
      };
      expect(await connected()).toBe(true);
      const deadline = Date.now() + 60_000;
      while (await connected()) {
        if (Date.now() > deadline) throw new Error('the idle connection was not closed within 60 s');
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(openMysqlPoolCount()).toBe(1);
    });

    it('closes its connections when the pools are closed', async () => {
      await step('SELECT 1');
      await closeMysqlPools();
      expect(openMysqlPoolCount()).toBe(0);
      await until(async () => {
        const [now] = await database.admin.query(
          'SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE USER = ?',
          [database.user],
        );
        return Number((now as Array<{ n: number }>)[0]?.n) === 0;
      }, `no connection of ${database.user} is left`);
    });
  });

  describe('credentials, TLS and errors', () => {
    it('takes the user from the URL, else from the credentials', async () => {
      expect(await step('SELECT CURRENT_USER() AS who')).toEqual([{ who: `${database.user}@%` }]);
      const fromCredentials = await step('SELECT CURRENT_USER() AS who', {
        url: database.bareUrl.replace('mysql://', 'mariadb://'),
        credentials: { username: database.user, password: database.password },
      });
      expect(fromCredentials).toEqual([{ who: `${database.user}@%` }]);
      const fromCredentialUrl = await step('SELECT CURRENT_USER() AS who', {
        url: database.bareUrl,
        credentials: { url: database.url },
      });
      expect(fromCredentialUrl).toEqual([{ who: `${database.user}@%` }]);
      // A connection URL for another server lends its login to no step on this one.
      const elsewhere = await rejection(
        step('SELECT 1', {
          url: database.bareUrl,
          credentials: { url: database.url.replace('127.0.0.1', 'db.elsewhere.example') },
        }),
      );
      expect(elsewhere.kind).toBe('authentication');
      expect(elsewhere.message).toContain('using password: NO');
    });

    it('fails a wrong password as an authentication error that names the system but never the password', async () => {
      const password = 'wrong-Secret-4711';
      const error = await rejection(
        step('SELECT 1', { url: database.bareUrl, credentials: { username: database.user, password } }),
      );
      expect(error.kind).toBe('authentication');
      expect(error.code).toBe('ER_ACCESS_DENIED_ERROR');
      expect(error.message).toContain(
        `MySQL authentication to 127.0.0.1:${database.server.port}/${database.name} failed`,
      );
      expect(error.message).toContain(`Access denied for user '${database.user}'`);
      expect(error.message).not.toContain(password);
    });

    it('fails a refused connection naming the address and the cause', async () => {
      const error = await rejection(step('SELECT 1', { url: 'mysql://u:pw-in-url-99@127.0.0.1:1/shop' }));
      expect(error.kind).toBe('connection');
      expect(error.code).toBe('ECONNREFUSED');
      expect(error.message).toContain('MySQL connection to 127.0.0.1:1/shop failed');
      expect(error.message).not.toContain('pw-in-url-99');
    });

    it('names the unknown table and the syntax error the server reports', async () => {
      const table = await rejection(step('SELECT * FROM no_such_table'));
      expect(table.kind).toBe('sql');
      expect(table.code).toBe('ER_NO_SUCH_TABLE');
      expect(table.message).toContain(`MySQL error on 127.0.0.1:${database.server.port}/${database.name}`);
      expect(table.message).toContain(`Table '${database.name}.no_such_table' doesn't exist`);
      const syntax = await rejection(step('SELEC 1'));
      expect(syntax.code).toBe('ER_PARSE_ERROR');
      expect(syntax.message).toContain('You have an error in your SQL syntax');
    });

    const cipher =
      "SELECT VARIABLE_VALUE AS cipher FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_CIPHER'";

    it('speaks TLS when the URL asks for it, and plain on loopback by default', async () => {
      expect(await step(cipher)).toEqual([{ cipher: '' }]);
      const required = (await step(cipher, { url: `${database.url}?ssl-mode=REQUIRED` })) as Array<{
        cipher: string;
      }>;
      expect(required[0]?.cipher).not.toBe('');
      const ssl = (await step(cipher, { url: `${database.url}?ssl=true` })) as Array<{ cipher: string }>;
      expect(ssl[0]?.cipher).not.toBe('');
    });

    it('verifies the certificate against the ca credential when asked to', async () => {
      const refused = await rejection(step(cipher, { url: `${database.url}?ssl-mode=VERIFY_IDENTITY` }));
      expect(refused.kind).toBe('connection');
      expect(refused.message).toMatch(/self[- ]signed certificate/);
      const verified = (await step(cipher, {
        url: `${database.url}?sslmode=verify-full`,
        credentials: { ca: database.server.ca },
      })) as Array<{ cipher: string }>;
      expect(verified[0]?.cipher).not.toBe('');
      const mode = await rejection(step(cipher, { url: `${database.url}?ssl-mode=sometimes` }));
      expect(mode.kind).toBe('invalid-request');
    });

    it('is refused by the egress guard before any packet is sent', async () => {
      const guard = new EgressGuard({ privateDefault: 'deny', allow: [], deny: [] });
      const error = await rejection(step('SELECT 1', { egress: guard }));
      expect(error.kind).toBe('connection');
      expect(error.message).toContain('refused to connect to 127.0.0.1');
      expect(await step('SELECT 1 AS ok', { egress: guard.withAllow(['127.0.0.1/32']) })).toEqual([
        { ok: 1 },
      ]);
    });
  });
});

describe.skipIf(mariadbSkip())('MySQL steps on a MariaDB without TLS', () => {
  // A server of its own: the run's server has TLS on.
  const plain = useStarted(
    async () => {
      const server = await startTestMariaDb({ tls: false });
      return { server, database: await createMariaDbDatabase(server) };
    },
    async ({ server, database }) => {
      await closeMysqlPools();
      await dropMariaDbDatabase(database);
      await server.stop();
    },
  );

  const cipher =
    "SELECT VARIABLE_VALUE AS cipher FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_CIPHER'";
  const run = (url: string) =>
    executeMysqlStep({
      url,
      body: cipher,
      credentials: {},
      modify: false,
      signal: new AbortController().signal,
      deadline: Date.now() + 20_000,
    });

  it('connects plain when TLS is only preferred, and refuses to when it is required', async () => {
    expect(await run(`${plain.database.url}?ssl-mode=PREFERRED`)).toEqual([{ cipher: '' }]);
    // The pool stays plain: the next step does not try TLS again.
    expect(await run(`${plain.database.url}?ssl-mode=PREFERRED`)).toEqual([{ cipher: '' }]);
    const error = await run(`${plain.database.url}?ssl-mode=REQUIRED`).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MysqlStepError);
    expect((error as MysqlStepError).kind).toBe('connection');
    expect((error as MysqlStepError).message).toContain('Server does not support secure connection');
  });
});
