/**
 * MySQL and MariaDB request steps over mysql2. One statement per step, sent as a server-side prepared
 * statement: the values of `params` are bound by the server, never spliced into the text, and a second
 * statement cannot be appended (multipleStatements stays off). A step that may not modify runs in a read-only
 * session inside `START TRANSACTION READ ONLY` (the session setting also refuses the DDL whose implicit
 * commit would end the transaction). Cancellation and the run's deadline stop the statement on the server
 * (`KILL QUERY` from a second connection; on MariaDB `max_statement_time` too, should this process die).
 * Rows are converted to JSON as they arrive and counted against the step data bound. Pools are kept per
 * connection settings and credentials, and close their idle connections. The URL and credentials become
 * connection settings in mysql-target.ts; the errors are mysql-errors.ts's.
 */
import type { Socket } from 'node:net';
import mysql from 'mysql2';
import type { JsonValue } from '../../contract/json.ts';
import { jsonBytes, STEP_DATA_SETTING, tooLargeMessage } from '../data-size.ts';
import type { ConnectionStepRequest } from './connection-step.ts';
import { EgressGuard, PERMISSIVE_EGRESS } from './egress-policy.ts';
import { GuardedSocket } from './egress-socket.ts';
import type { GatewayDial } from './gateway-socket.ts';
import {
  aborted,
  describeError,
  isServerError,
  MysqlStepError,
  type ServerError,
  timedOut,
} from './mysql-errors.ts';
import {
  type MysqlTlsMode,
  type ResolvedMysqlConnection,
  resolveMysqlConnection,
  sslOption,
} from './mysql-target.ts';
import { POOL_BOUNDS, PoolRegistry } from './pool-registry.ts';
import { parseSqlBody, type SqlQuery } from './sql-body.ts';
import { exactDecimal, sqlValueJson } from './sql-values.ts';
import { watchdog } from './step-bounds.ts';

export { type MysqlErrorKind, MysqlStepError } from './mysql-errors.ts';

/**
 * A MySQL step. `url`: `mysql://` or `mariadb://`; may carry userinfo, a database, `ssl-mode` (or
 * `sslmode`) and `ssl`. `body`: `{ query, params }` (`values` accepted for `params`), that object as a JSON
 * string, or plain SQL. `credentials`: `username` (or `user`) and `password` when the URL has none; `ca`: a
 * PEM to verify the server with. The statement may not run past the deadline; rows past the step data
 * bound fail the step and stop the statement.
 */
export type MysqlStepRequest = ConnectionStepRequest;

const CONNECT_TIMEOUT_MS = 10_000;
/** Prepared statements a connection keeps (the least used is closed on the server past it). */
const MAX_PREPARED_STATEMENTS = 64;

// ---------------------------------------------------------------------------------------------
// Request body

export function parseMysqlBody(body: unknown): SqlQuery {
  return parseSqlBody(
    body,
    (message) => new MysqlStepError('invalid-request', `Invalid MySQL step body: ${message}`),
    '?',
  );
}

// ---------------------------------------------------------------------------------------------
// JSON values

/** MySQL column types (the protocol's numbers) whose values need converting. */
const TYPE = {
  DECIMAL: 0,
  TIMESTAMP: 7,
  DATETIME: 12,
  BIT: 16,
  NEWDECIMAL: 246,
} as const;

/** A BIT value: the unsigned big-endian integer, a number when safe, else its decimal text. */
function bitValue(bytes: Buffer): number | string {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
}

/** `2024-01-02 03:04:05[.ffffff]` → ISO 8601 (`Z` for TIMESTAMP, which the session shows in UTC). Zero dates stay text. */
function isoDateTime(text: string, utc: boolean): string {
  if (!/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/.test(text) || text.startsWith('0000-')) return text;
  return `${text.replace(' ', 'T')}${utc ? 'Z' : ''}`;
}

function fieldValue(value: unknown, type: number | undefined): JsonValue {
  if (value === null || value === undefined) return null;
  switch (type) {
    case TYPE.DECIMAL:
    case TYPE.NEWDECIMAL:
      return typeof value === 'string' ? exactDecimal(value) : sqlValueJson(value);
    case TYPE.TIMESTAMP:
      return typeof value === 'string' ? isoDateTime(value, true) : sqlValueJson(value);
    case TYPE.DATETIME:
      return typeof value === 'string' ? isoDateTime(value, false) : sqlValueJson(value);
    case TYPE.BIT:
      return Buffer.isBuffer(value) ? bitValue(value) : sqlValueJson(value);
    default:
      return sqlValueJson(value);
  }
}

// ---------------------------------------------------------------------------------------------
// Pools

interface PoolEntry {
  pool: mysql.Pool;
  resolved: ResolvedMysqlConnection;
  /** The TLS the pool's connections use (PREFERRED falls back to none once a server offers none). */
  tls: MysqlTlsMode;
  stream: () => Socket;
  /** Connections checked out: an evicted pool ends once they are back. */
  busy: number;
  drained?: () => void;
}

const pools = new PoolRegistry<PoolEntry>(POOL_BOUNDS.maxPools, endPool);

async function endPool(entry: PoolEntry): Promise<void> {
  if (entry.busy > 0) await new Promise<void>((resolve) => (entry.drained = resolve));
  await entry.pool.promise().end();
}

function poolKey(
  resolved: ResolvedMysqlConnection,
  guard: EgressGuard,
  gateway: GatewayDial | undefined,
): string {
  const { secrets: _secrets, label: _label, ...settings } = resolved;
  // Connections judged under other egress rules (another system's allowlist) are never shared.
  return `${gateway?.key ?? guard.key} ${JSON.stringify(settings)}`;
}

/** mysql2 takes a connected (or connecting) stream: the egress guard judges the address really connected to. */
function streamFactory(resolved: ResolvedMysqlConnection, guard: EgressGuard, gateway?: GatewayDial) {
  return (): Socket => {
    const socket = gateway ? gateway.socket() : new GuardedSocket(guard);
    socket.setNoDelay(true);
    return socket.connect(resolved.port, resolved.host);
  };
}

/**
 * Where and as whom a connection to the entry's server logs in, over which socket and TLS: the pool's
 * connections and the separate one that kills a query alike, without the flags each adds.
 */
function loginOptions(entry: Pick<PoolEntry, 'resolved' | 'tls' | 'stream'>) {
  const { resolved } = entry;
  const ssl = sslOption(resolved, entry.tls);
  return {
    host: resolved.host,
    port: resolved.port,
    ...(resolved.user !== undefined ? { user: resolved.user } : {}),
    ...(resolved.password !== undefined ? { password: resolved.password } : {}),
    ...(ssl ? { ssl } : {}),
    stream: entry.stream,
  };
}

function newPool(entry: Pick<PoolEntry, 'resolved' | 'tls' | 'stream'>): mysql.Pool {
  const { resolved } = entry;
  const pool = mysql.createPool({
    ...loginOptions(entry),
    ...(resolved.database !== undefined ? { database: resolved.database } : {}),
    connectionLimit: POOL_BOUNDS.connectionsPerPool,
    // Below the limit, so mysql2 closes connections idle for idleTimeout.
    maxIdle: POOL_BOUNDS.connectionsPerPool - 1,
    idleTimeout: POOL_BOUNDS.idleMs,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxPreparedStatements: MAX_PREPARED_STATEMENTS,
    // Exact values, converted by fieldValue: big integers as text past 2^53, dates as the server's text.
    supportBigNumbers: true,
    bigNumberStrings: false,
    dateStrings: true,
    decimalNumbers: false,
    multipleStatements: false,
    // The server may ask the client to send a file (LOAD DATA LOCAL): this client has none to send.
    flags: ['-LOCAL_FILES'],
    connectAttributes: { program_name: 'kubeglue' },
  });
  // An idle connection losing its server must not crash the process; the pool drops it.
  pool.on('connection', (connection) => connection.on('error', () => {}));
  return pool;
}

function poolFor(resolved: ResolvedMysqlConnection, guard: EgressGuard, gateway?: GatewayDial): PoolEntry {
  return pools.get(poolKey(resolved, guard, gateway), () => {
    const entry = { resolved, tls: resolved.tls, stream: streamFactory(resolved, guard, gateway), busy: 0 };
    return { ...entry, pool: newPool(entry) };
  });
}

/** Ends every pool (shutdown, tests). */
export function closeMysqlPools(): Promise<void> {
  return pools.closeAll();
}

/** Number of pools currently open (for tests). */
export function openMysqlPoolCount(): number {
  return pools.size;
}

function getConnection(pool: mysql.Pool): Promise<mysql.PoolConnection> {
  return new Promise((resolve, reject) =>
    pool.getConnection((error, connection) => (error ? reject(error) : resolve(connection))),
  );
}

async function connect(entry: PoolEntry): Promise<mysql.PoolConnection> {
  try {
    return await getConnection(entry.pool);
  } catch (error) {
    if (entry.tls !== 'preferred' || (error as { code?: unknown }).code !== 'HANDSHAKE_NO_SSL_SUPPORT') {
      throw error;
    }
    // PREFERRED against a server without TLS: this pool's connections are plain from now on.
    const old = entry.pool;
    entry.tls = 'disabled';
    entry.pool = newPool(entry);
    void old
      .promise()
      .end()
      .catch(() => {});
    return getConnection(entry.pool);
  }
}

// ---------------------------------------------------------------------------------------------
// Execution

/** One query on a connection (setup statements and COMMIT), as a promise. */
function run(connection: mysql.PoolConnection, sql: string): Promise<void> {
  return new Promise((resolve, reject) =>
    connection.query(sql, (error) => (error ? reject(error) : resolve())),
  );
}

/**
 * mysql2 tells MariaDB from MySQL by the handshake's server version and keeps it only in this field (no
 * public accessor); the MariaDB tests fail at once should it go, since MySQL's variable names differ.
 */
function isMariaDb(connection: mysql.PoolConnection): boolean {
  return (connection as unknown as { _isMariaDB?: unknown })._isMariaDB === true;
}

/**
 * The session as every step starts it, whatever an earlier step on this connection set: read-only or not
 * (also for statements after an implicit commit), time stamps in UTC, and on MariaDB the statement's own time
 * limit, so the server stops it at the deadline even when this process is gone and sends no KILL.
 */
function sessionSetup(connection: mysql.PoolConnection, modify: boolean, deadline: number): string {
  // A second past the deadline: the KILL QUERY at the deadline comes first while this process lives.
  const seconds = Math.max(0.001, (deadline - Date.now()) / 1000 + 1).toFixed(3);
  return isMariaDb(connection)
    ? `SET SESSION tx_read_only = ${modify ? 0 : 1}, time_zone = '+00:00', max_statement_time = ${seconds}`
    : `SET SESSION transaction_read_only = ${modify ? 0 : 1}, time_zone = '+00:00'`;
}

/** What a statement answered, before it becomes the step's data. */
interface Outcome {
  resultSets: JsonValue[][];
  header: { affectedRows: number; insertId: number | string; warnings: number } | undefined;
}

class TooLarge extends Error {}

/**
 * Runs the statement, converting rows as they arrive; past `maxBytes` of JSON it calls `onTooLarge` once
 * (which stops the statement on the server) and keeps no more rows.
 */
function execute(
  connection: mysql.PoolConnection,
  query: SqlQuery,
  maxBytes: number,
  onTooLarge: (bytes: number) => void,
): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const outcome: Outcome = { resultSets: [], header: undefined };
    let types: Array<number | undefined> = [];
    let names: string[] = [];
    let bytes = 2;
    let tooLarge = false;
    const command = connection.execute(query.text, query.params);
    command.on('fields', (fields: unknown, index: number) => {
      // A statement without a result set (a write) announces no fields.
      if (!Array.isArray(fields)) return;
      const list = fields as mysql.FieldPacket[];
      types = list.map((field) => field.columnType ?? field.type);
      names = list.map((field) => field.name);
      // A result set without rows is still a result set.
      while (outcome.resultSets.length <= index) outcome.resultSets.push([]);
    });
    command.on('result', (result: unknown, index: number) => {
      if (tooLarge) return;
      if (Array.isArray(result) || !isHeader(result)) {
        const source = result as Record<string, unknown>;
        const row: Record<string, JsonValue> = {};
        names.forEach((name, column) => {
          row[name] = fieldValue(source[name], types[column]);
        });
        bytes += jsonBytes(row) + 1;
        if (bytes > maxBytes) {
          tooLarge = true;
          onTooLarge(bytes);
          return;
        }
        outcome.resultSets[index]?.push(row);
        return;
      }
      outcome.header = {
        affectedRows: result.affectedRows,
        insertId: sqlValueJson(result.insertId) as number | string,
        warnings: result.warningStatus,
      };
    });
    command.on('error', (error: Error) => reject(error));
    command.on('end', () => (tooLarge ? reject(new TooLarge()) : resolve(outcome)));
  });
}

function isHeader(result: unknown): result is mysql.ResultSetHeader {
  return (
    typeof result === 'object' &&
    result !== null &&
    (result as { constructor?: { name?: string } }).constructor?.name === 'ResultSetHeader'
  );
}

/** The step's data: the rows of a read; affectedRows and insertId of a write; every result set of a CALL. */
function stepData(outcome: Outcome): JsonValue {
  const sets = outcome.resultSets;
  if (sets.length === 1) return sets[0] as JsonValue[];
  if (sets.length > 1) return { resultSets: sets };
  const header = outcome.header ?? { affectedRows: 0, insertId: 0, warnings: 0 };
  return { affectedRows: header.affectedRows, insertId: header.insertId, warnings: header.warnings };
}

async function runTransaction(
  connection: mysql.PoolConnection,
  query: SqlQuery,
  modify: boolean,
  deadline: number,
  maxBytes: number,
  onTooLarge: (bytes: number) => void,
): Promise<Outcome> {
  await run(connection, sessionSetup(connection, modify, deadline));
  await run(connection, modify ? 'START TRANSACTION READ WRITE' : 'START TRANSACTION READ ONLY');
  try {
    const outcome = await execute(connection, query, maxBytes, onTooLarge);
    await run(connection, 'COMMIT');
    return outcome;
  } catch (error) {
    await run(connection, 'ROLLBACK').catch(() => {});
    throw error;
  }
}

/** Asks the server to stop the statement running on `threadId`, over a separate short connection. */
function killQuery(entry: PoolEntry, threadId: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const connection = mysql.createConnection({
      ...loginOptions(entry),
      connectTimeout: CONNECT_TIMEOUT_MS,
      flags: ['-LOCAL_FILES'],
    });
    connection.on('error', () => {});
    // threadId is the integer the server gave in its handshake: nothing else goes into the text.
    connection.query(`KILL QUERY ${Math.trunc(threadId)}`, (error) => {
      connection.destroy();
      if (error) reject(error);
      else resolve();
    });
  });
}

/**
 * Runs one MySQL/MariaDB step: the rows as JSON objects for a statement that returns rows, `{affectedRows,
 * insertId, warnings}` for one that does not, `{resultSets: [...]}` for a CALL answering several. Values:
 * BIGINT as a number when safe (else a string), DECIMAL as a number up to 15 significant digits (else a
 * string), DATE as `YYYY-MM-DD`, DATETIME as ISO 8601 without zone, TIMESTAMP as ISO 8601 UTC, TIME as text,
 * JSON parsed, BIT as a number, binary strings (BLOB, BINARY, VARBINARY) as base64.
 */
export async function executeMysqlStep(req: MysqlStepRequest): Promise<JsonValue> {
  const query = parseMysqlBody(req.body);
  const resolved = resolveMysqlConnection(req.url, req.credentials);
  if (req.signal.aborted) throw aborted(resolved.label);
  if (Date.now() >= req.deadline) throw timedOut(resolved.label);

  const entry = poolFor(resolved, req.egress ?? new EgressGuard(PERMISSIVE_EGRESS), req.gateway);
  entry.busy += 1;
  const done = (): void => {
    entry.busy -= 1;
    if (entry.busy === 0) entry.drained?.();
  };
  const guard = watchdog(req.signal, req.deadline, {
    aborted: () => aborted(resolved.label),
    timeout: () => timedOut(resolved.label),
  });
  let connection: mysql.PoolConnection;
  const connecting = connect(entry);
  try {
    connection = await Promise.race([connecting, guard.fired]);
  } catch (error) {
    guard.dispose();
    done();
    // A connection that arrives after we gave up goes straight back to the pool.
    connecting.then((late) => late.release()).catch(() => {});
    throw describeError(error, resolved, true);
  }
  const current = connection;
  const release = (): void => {
    current.release();
    done();
  };
  // Stop the statement on the server. The connection is not used again after a KILL QUERY, which could
  // arrive once its statement is over: it is closed when the statement and the KILL are (or the KILL
  // failed, which leaves closing it as the way to stop the statement).
  let killing: Promise<void> | undefined;
  const stop = (): void => {
    killing ??= killQuery(entry, current.threadId).catch(() => current.destroy());
  };
  let rowsTooLarge: number | undefined;
  const work = runTransaction(
    current,
    query,
    req.modify,
    req.deadline,
    req.maxDataBytes ?? Number.POSITIVE_INFINITY,
    (bytes) => {
      rowsTooLarge = bytes;
      stop();
    },
  );
  /** Once the statement (and a KILL sent for it) is over, the connection goes back to the pool, or is closed. */
  const releaseLater = (): void => {
    void work
      .catch(() => {})
      .then(() => killing)
      .then(() => {
        if (killing) current.destroy();
        release();
      });
  };
  try {
    const outcome = await Promise.race([work, guard.fired]);
    release();
    return stepData(outcome);
  } catch (error) {
    if (error instanceof MysqlStepError && (error.kind === 'aborted' || error.kind === 'timeout')) {
      stop();
      releaseLater();
      throw error;
    }
    if (error instanceof TooLarge || rowsTooLarge !== undefined) {
      releaseLater();
      const limit = req.maxDataBytes ?? 0;
      throw new MysqlStepError(
        'too-large',
        `${tooLargeMessage("the step's data (the rows so far)", rowsTooLarge ?? limit, limit, STEP_DATA_SETTING)}; the statement was stopped`,
      );
    }
    if (isServerError(error) && (error as ServerError).fatal === true) current.destroy();
    release();
    throw describeError(error, resolved, false);
  } finally {
    guard.dispose();
  }
}
