/**
 * Postgres request steps over `pg`: one parameterised statement per step inside a transaction
 * (READ ONLY unless the step may modify), bounded by the run's deadline via statement_timeout,
 * cancelled on abort, on pooled connections kept per connection string.
 */
import pg from 'pg';
import type { JsonValue } from '../../contract/json.ts';
import { ConnectionStepError, type ConnectionStepRequest } from './connection-step.ts';
import { decodedHost, parseDataStoreUrl } from './data-store-url.ts';
import { EgressGuard, PERMISSIVE_EGRESS } from './egress-policy.ts';
import { GuardedSocket } from './egress-socket.ts';
import type { GatewayDial } from './gateway-socket.ts';
import { POOL_BOUNDS, PoolRegistry } from './pool-registry.ts';
import { parseSqlBody, type SqlQuery } from './sql-body.ts';
import { exactDecimal, safeInteger, sqlValueJson } from './sql-values.ts';
import { scrubSecrets, watchdog } from './step-bounds.ts';

/**
 * A Postgres step. `url`: `postgres://` or `postgresql://`; may carry userinfo, `sslmode`, `host`, `options`,
 * `application_name`. `body`: `{ query, params }` (`values` accepted for `params`), that object as a JSON
 * string, or plain SQL. `credentials`: `username` (or `user`) and `password` when the URL has none. The
 * egress guard judges every connection (TCP host, `?host=`, unix socket); the statement may not run past
 * the deadline.
 */
export type PostgresStepRequest = ConnectionStepRequest;

export type PostgresErrorKind =
  | 'sql'
  | 'read-only'
  | 'timeout'
  | 'aborted'
  | 'connection'
  | 'invalid-request';

/** `code`: SQLSTATE for server errors, the system error code (ECONNREFUSED…) for connection failures. */
export class PostgresStepError extends ConnectionStepError<PostgresErrorKind> {
  override name = 'PostgresStepError';
}

const CONNECT_TIMEOUT_MS = 30_000;

// ---------------------------------------------------------------------------------------------
// Request body

export type PostgresQuery = SqlQuery;

/** `{query, params|values}` as an object or JSON text, or a plain SQL string (no params). */
export function parsePostgresBody(body: unknown): PostgresQuery {
  return parseSqlBody(
    body,
    (message) => new PostgresStepError('invalid-request', `Invalid Postgres step body: ${message}`),
    '$1',
  );
}

// ---------------------------------------------------------------------------------------------
// Connection settings

type SslMode = 'disable' | 'allow' | 'prefer' | 'require' | 'verify-ca' | 'verify-full';
const SSL_MODES: readonly string[] = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'];

export interface ResolvedConnection {
  config: pg.PoolConfig;
  /** `prefer`: TLS first, plain connection when the server does not offer TLS. */
  plainFallback: boolean;
  /** Text that must never appear in an error (the password). */
  secrets: string[];
  /** host:port/database, for messages. */
  label: string;
}

function isLoopback(host: string): boolean {
  return (
    host === 'localhost' ||
    host.startsWith('/') ||
    /^127\.\d+\.\d+\.\d+$/.test(host) ||
    host === '::1' ||
    host === ''
  );
}

function sslFor(mode: SslMode): pg.PoolConfig['ssl'] {
  switch (mode) {
    case 'disable':
    case 'allow':
      return false;
    case 'prefer':
    case 'require':
      // libpq semantics: encrypted, certificate not checked.
      return { rejectUnauthorized: false };
    case 'verify-ca':
      // Chain checked against the trusted CAs, host name not.
      return { rejectUnauthorized: true, checkServerIdentity: () => undefined };
    case 'verify-full':
      return { rejectUnauthorized: true };
  }
}

function sslModeFrom(params: URLSearchParams, host: string): SslMode {
  const explicit = params.get('sslmode');
  if (explicit !== null) {
    if (!SSL_MODES.includes(explicit)) {
      throw new PostgresStepError(
        'invalid-request',
        `Unsupported sslmode '${explicit}' (use ${SSL_MODES.join(', ')})`,
      );
    }
    return explicit as SslMode;
  }
  const ssl = params.get('ssl');
  if (ssl === 'true' || ssl === '1') return 'require';
  if (ssl === 'false' || ssl === '0') return 'disable';
  return isLoopback(host) ? 'disable' : 'prefer';
}

const TYPE_PARSERS = jsonSafeTypeParsers();

/**
 * Connection settings from the URL, credentials filling in what the URL lacks. Only the parameters
 * listed on PostgresStepRequest.url are read; file-based ones (sslrootcert, sslcert…) are not.
 */
export function resolvePostgresConnection(
  url: string,
  credentials: Record<string, string>,
): ResolvedConnection {
  const parsed = parseDataStoreUrl(
    url,
    { name: 'Postgres', schemes: ['postgres:', 'postgresql:'] },
    (message) => new PostgresStepError('invalid-request', message),
  );
  const params = parsed.searchParams;
  const host = params.get('host') ?? decodedHost(parsed);
  const user = decodeURIComponent(parsed.username) || credentials.username || credentials.user || undefined;
  const password = parsed.password ? decodeURIComponent(parsed.password) : credentials.password;
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || user;
  const port = parsed.port ? Number(parsed.port) : Number(params.get('port') ?? 5432);
  const mode = sslModeFrom(params, host);

  const config: pg.PoolConfig = {
    host: host || 'localhost',
    port,
    ...(user !== undefined && { user }),
    ...(password !== undefined && { password }),
    ...(database !== undefined && { database }),
    ssl: sslFor(mode),
    application_name: params.get('application_name') ?? 'kubeglue',
    ...(params.get('options') !== null && { options: params.get('options') ?? '' }),
    types: TYPE_PARSERS,
    max: POOL_BOUNDS.connectionsPerPool,
    idleTimeoutMillis: POOL_BOUNDS.idleMs,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    allowExitOnIdle: true,
  };
  return {
    config,
    plainFallback: mode === 'prefer',
    secrets: password ? [password, encodeURIComponent(password)] : [],
    label: `${config.host}:${port}/${database ?? ''}`,
  };
}

// ---------------------------------------------------------------------------------------------
// JSON-safe values

function jsonSafeTypeParsers(): pg.CustomTypesConfig {
  // pg-types' TypeId enum lists only scalar builtins; array OIDs are registered too.
  const baseParser = pg.types.getTypeParser as (oid: number, format: 'text' | 'binary') => unknown;
  const textArray = baseParser(1009, 'text') as (text: string) => Array<string | null>;
  const parseTimestamptz = baseParser(1184, 'text') as (text: string) => unknown;
  const asArray =
    (element: (text: string) => unknown) =>
    (text: string): unknown[] =>
      textArray(text).map((item) => (item === null ? null : element(item)));
  const identity = (text: string): string => text;
  // An instant: ISO 8601 in UTC (millisecond precision); infinity and BC dates keep Postgres' text.
  const timestamptz = (text: string): string => {
    const value = parseTimestamptz(text);
    return value instanceof Date && !Number.isNaN(value.getTime()) ? value.toISOString() : text;
  };
  // No zone: ISO 8601 local date-time, not shifted by the runner's time zone.
  const timestamp = (text: string): string => text.replace(' ', 'T');

  const overrides = new Map<number, (text: string) => unknown>([
    [20, safeInteger],
    [1016, asArray(safeInteger)],
    [1700, exactDecimal],
    [1231, asArray(exactDecimal)],
    [1082, identity],
    [1182, asArray(identity)],
    [1114, timestamp],
    [1115, asArray(timestamp)],
    [1184, timestamptz],
    [1185, asArray(timestamptz)],
    [1186, identity],
    [1187, asArray(identity)],
  ]);
  return {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
      const override = format === 'binary' ? undefined : overrides.get(oid);
      return override ?? baseParser(oid, format ?? 'text');
    }) as pg.CustomTypesConfig['getTypeParser'],
  };
}

// ---------------------------------------------------------------------------------------------
// Pools

interface PoolEntry {
  pool: pg.Pool;
  config: pg.PoolConfig;
  plainFallback: boolean;
}

// end() waits for checked-out clients to come back, so a running step is not cut off.
const pools = new PoolRegistry<PoolEntry>(POOL_BOUNDS.maxPools, (entry) => entry.pool.end());

function poolKey(resolved: ResolvedConnection, guard: EgressGuard, gateway: GatewayDial | undefined): string {
  const { types: _types, stream: _stream, ...rest } = resolved.config;
  const settings = JSON.stringify(rest, (_key, value: unknown) =>
    typeof value === 'function' ? String(value) : value,
  );
  // Connections judged under other egress rules (another system's allowlist) are never shared.
  return `${resolved.plainFallback ? 'prefer' : 'fixed'} ${gateway?.key ?? guard.key} ${settings}`;
}

/**
 * pg connects through this socket (its `stream` option), so the egress guard judges the address pg really
 * connects to, whatever picked it (URL host, `?host=`, a unix socket path), while pg keeps doing TLS itself
 * with the host name as the server name.
 */
function guardedStream(guard: EgressGuard): () => GuardedSocket {
  return () => new GuardedSocket(guard);
}

function newPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config);
  // An idle client losing its connection must not crash the process; the pool drops it.
  pool.on('error', () => {});
  return pool;
}

function poolFor(resolved: ResolvedConnection, guard: EgressGuard, gateway?: GatewayDial): PoolEntry {
  return pools.get(poolKey(resolved, guard, gateway), () => {
    const config: pg.PoolConfig = {
      ...resolved.config,
      stream: gateway ? gateway.socket : guardedStream(guard),
    };
    return { pool: newPool(config), config, plainFallback: resolved.plainFallback };
  });
}

/** Ends every pool (shutdown, tests). */
export async function closePostgresPools(): Promise<void> {
  await pools.closeAll();
}

/** Number of pools currently open (for tests and metrics). */
export function openPostgresPoolCount(): number {
  return pools.size;
}

function isNoTlsError(error: unknown): boolean {
  return error instanceof Error && /does not support SSL/i.test(error.message);
}

async function connect(entry: PoolEntry): Promise<pg.PoolClient> {
  try {
    return await entry.pool.connect();
  } catch (error) {
    if (!entry.plainFallback || !isNoTlsError(error)) throw error;
    // sslmode=prefer against a server without TLS: switch this pool to plain connections for good.
    const old = entry.pool;
    entry.config = { ...entry.config, ssl: false };
    entry.pool = newPool(entry.config);
    entry.plainFallback = false;
    void old.end().catch(() => {});
    return entry.pool.connect();
  }
}

// ---------------------------------------------------------------------------------------------
// Errors

function describeError(error: unknown, resolved: ResolvedConnection): PostgresStepError {
  if (error instanceof PostgresStepError) return error;
  if (error instanceof pg.DatabaseError) {
    const detail = error.detail ? ` (${error.detail})` : '';
    if (error.code === '25006') {
      return new PostgresStepError(
        'read-only',
        scrubSecrets(
          `Postgres error ${error.code}: ${error.message}${detail}; the step has modify: false, so it runs in a READ ONLY transaction (set modify: true to allow writes)`,
          resolved.secrets,
        ),
        error.code,
      );
    }
    const hint = error.hint ? ` Hint: ${error.hint}` : '';
    return new PostgresStepError(
      'sql',
      scrubSecrets(`Postgres error ${error.code ?? ''}: ${error.message}${detail}${hint}`, resolved.secrets),
      error.code,
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  return new PostgresStepError(
    'connection',
    scrubSecrets(`Postgres connection to ${resolved.label} failed: ${message}`, resolved.secrets),
    typeof code === 'string' ? code : undefined,
  );
}

// ---------------------------------------------------------------------------------------------
// Execution

const STOPPED = {
  aborted: () => new PostgresStepError('aborted', 'Postgres query was aborted'),
  timeout: () => new PostgresStepError('timeout', 'Postgres query timed out: the run deadline was reached'),
};

/** Asks the server to cancel the statement running on `pid`, over a separate short connection. */
async function cancelBackend(config: pg.PoolConfig, pid: number): Promise<void> {
  const { max: _max, idleTimeoutMillis: _idle, allowExitOnIdle: _exit, ...clientConfig } = config;
  const client = new pg.Client({ ...clientConfig, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT pg_cancel_backend($1)', [pid]);
  } finally {
    await client.end().catch(() => {});
  }
}

function backendPid(client: pg.PoolClient): number | undefined {
  const pid = (client as unknown as { processID?: unknown }).processID;
  return typeof pid === 'number' ? pid : undefined;
}

async function runTransaction(
  client: pg.PoolClient,
  query: PostgresQuery,
  modify: boolean,
  deadline: number,
): Promise<unknown[]> {
  const timeoutMs = Math.max(1, Math.floor(deadline - Date.now()));
  // The SELECT takes the transaction's snapshot, after which the user's statement can no longer
  // switch a READ ONLY transaction to read-write (SET TRANSACTION READ WRITE is refused).
  await client.query(
    `${modify ? 'BEGIN' : 'BEGIN READ ONLY'}; SET LOCAL statement_timeout = ${timeoutMs}; SELECT 1`,
  );
  let result: pg.QueryResult;
  try {
    // The extended protocol admits exactly one statement, so no `COMMIT; INSERT …` smuggling.
    result = await client.query({
      text: query.text,
      values: query.params,
      queryMode: 'extended',
    } as pg.QueryConfig);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    // Session state a statement may have changed (SET, temp tables, prepared statements) must not
    // leak into the next step that borrows this connection.
    await client.query('DISCARD ALL').catch(() => {});
  }
  return result.rows;
}

/**
 * Runs one Postgres step and resolves with its rows as JSON values: bigint as a number when safe
 * (else a string), numeric as a number up to 15 significant digits (else a string), timestamptz as
 * ISO 8601 UTC, timestamp as ISO 8601 without zone, date/interval as Postgres text, bytea as base64.
 */
export async function executePostgresStep(req: PostgresStepRequest): Promise<JsonValue> {
  const query = parsePostgresBody(req.body);
  const resolved = resolvePostgresConnection(req.url, req.credentials);
  if (req.signal.aborted) throw new PostgresStepError('aborted', 'Postgres query was aborted');
  if (Date.now() >= req.deadline) {
    throw new PostgresStepError('timeout', 'Postgres query timed out: the run deadline was reached');
  }

  const entry = poolFor(resolved, req.egress ?? new EgressGuard(PERMISSIVE_EGRESS), req.gateway);
  const guard = watchdog(req.signal, req.deadline, STOPPED);
  try {
    const connecting = connect(entry);
    let client: pg.PoolClient;
    try {
      client = await Promise.race([connecting, guard.fired]);
    } catch (error) {
      // A connection that arrives after we gave up goes straight back to the pool.
      connecting.then((late) => late.release()).catch(() => {});
      throw describeError(error, resolved);
    }

    let released = false;
    const release = (destroy: boolean): void => {
      if (released) return;
      released = true;
      client.off('error', onClientError);
      client.release(destroy);
    };
    const onClientError = (): void => release(true);
    client.on('error', onClientError);

    const work = runTransaction(client, query, req.modify, req.deadline);
    work.then(
      () => release(false),
      (error: unknown) => release(!(error instanceof pg.DatabaseError)),
    );
    try {
      const rows = await Promise.race([work, guard.fired]);
      return sqlValueJson(rows);
    } catch (error) {
      if (error instanceof PostgresStepError && (error.kind === 'aborted' || error.kind === 'timeout')) {
        // Stop the statement on the server; if that fails, the connection is closed instead.
        const pid = backendPid(client);
        if (pid === undefined) release(true);
        else void cancelBackend(entry.config, pid).catch(() => release(true));
        throw error;
      }
      if (
        error instanceof pg.DatabaseError &&
        error.code === '57014' &&
        /statement timeout/.test(error.message)
      ) {
        throw new PostgresStepError(
          'timeout',
          `Postgres query timed out: the run deadline was reached (${error.message})`,
          error.code,
        );
      }
      throw describeError(error, resolved);
    }
  } finally {
    guard.dispose();
  }
}
