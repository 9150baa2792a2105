/**
 * Redis request steps (`redis://`, `rediss://` for TLS) over ioredis. The body is one command or a pipeline
 * of commands (redis-body.ts), each argument one RESP bulk string; replies become JSON (redis-reply.ts).
 *
 * Connections: ioredis speaks over a socket kubeglue opens itself (its `Connector`), through the egress
 * guard or the system's gateway tunnel, with TLS on top for `rediss://`. They are leased whole to one step
 * at a time (a blocking command or a transaction holds its connection) from a bounded pool per server,
 * database and credentials (connection-pool.ts, pool-registry.ts).
 *
 * Bounds: the run's deadline and cancellation close the step's connection, which is what stops a command
 * on a Redis server (a blocked BLPOP or XREAD ends when its client goes); a reply larger than the step
 * data bound closes it too, when that many bytes have arrived, so a huge value is never read whole.
 *
 * `modify: false` runs only commands the server's own command table (COMMAND INFO, cached per pool) flags
 * `readonly`; anything else, unknown commands included, is refused before anything is sent.
 *
 * The URL and credentials become connection settings in redis-target.ts; the errors are redis-errors.ts's.
 */
import { createHash } from 'node:crypto';
import { isIP, type Socket } from 'node:net';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { AbstractConnector, Command, Redis } from 'ioredis';
import type { JsonValue } from '../../contract/json.ts';
import { ConnectionPool, type PooledConnection } from './connection-pool.ts';
import type { ConnectionStepRequest } from './connection-step.ts';
import { EgressGuard, PERMISSIVE_EGRESS } from './egress-policy.ts';
import { connectGuarded } from './egress-socket.ts';
import type { GatewayDial } from './gateway-socket.ts';
import { POOL_BOUNDS, PoolRegistry } from './pool-registry.ts';
import { parseRedisBody, type RedisCommand, type RedisRequest } from './redis-body.ts';
import {
  codeOf,
  commandError,
  connectError,
  firstWord,
  isReplyError,
  RedisStepError,
  serverMessage,
} from './redis-errors.ts';
import { replyToJson } from './redis-reply.ts';
import { type RedisTarget, resolveRedisTarget } from './redis-target.ts';
import { scrubSecrets, watchdog } from './step-bounds.ts';

export { type RedisErrorKind, RedisStepError } from './redis-errors.ts';

/**
 * A Redis step. `url`: `redis://[user:password@]host[:port][/db]` or `rediss://…`; `?tlsInsecure=true`
 * skips the certificate check. `credentials`: `username`, `password` (when the URL has none) and, for
 * rediss://, `ca` (PEM). `maxDataBytes`: the most bytes of replies one step reads; unbounded when absent.
 */
export type RedisStepRequest = ConnectionStepRequest;

const CONNECT_TIMEOUT_MS = 30_000;

// ---------------------------------------------------------------------------------------------------
// Connections

/** Counts the reply bytes of the step holding the connection, and closes it past the step's bound. */
class ReplyMeter {
  #read = 0;
  #limit = Number.POSITIVE_INFINITY;
  #onExceeded: ((bytes: number, limit: number) => void) | undefined;

  start(limit: number, onExceeded: (bytes: number, limit: number) => void): void {
    this.#read = 0;
    this.#limit = limit;
    this.#onExceeded = onExceeded;
  }

  stop(): void {
    this.#limit = Number.POSITIVE_INFINITY;
    this.#onExceeded = undefined;
  }

  add(bytes: number): void {
    this.#read += bytes;
    if (this.#read > this.#limit) {
      const [onExceeded, limit] = [this.#onExceeded, this.#limit];
      this.stop();
      onExceeded?.(this.#read, limit);
    }
  }
}

class RedisConnection implements PooledConnection {
  readonly client: Redis;
  readonly socket: Socket;
  readonly meter = new ReplyMeter();
  #closed = false;

  constructor(client: Redis, socket: Socket) {
    this.client = client;
    this.socket = socket;
    socket.once('close', () => {
      this.#closed = true;
    });
    // First in line, before ioredis's decoder: past the bound the bytes are not decoded at all.
    socket.prependListener('data', (chunk: Buffer) => this.meter.add(chunk.length));
  }

  get closed(): boolean {
    return this.#closed || this.client.status !== 'ready';
  }

  /** One command; its reply with strings as bytes (redis-reply.ts decides what they are). */
  send(name: string, args: ReadonlyArray<string | Buffer>): Promise<unknown> {
    return this.client.sendCommand(new Command(name, [...args], { replyEncoding: null })) as Promise<unknown>;
  }

  setActive(active: boolean): void {
    if (active) this.socket.ref();
    else this.socket.unref();
  }

  destroy(): void {
    this.#closed = true;
    this.socket.destroy();
    this.client.disconnect();
  }
}

async function openSocket(
  target: RedisTarget,
  egress: EgressGuard,
  gateway: GatewayDial | undefined,
  timeoutMs: number,
): Promise<Socket> {
  const raw = gateway
    ? await gateway.connect(timeoutMs)
    : await connectGuarded(egress, { host: target.host, port: target.port, timeoutMs });
  raw.setNoDelay(true);
  if (!target.tls) return raw;
  return new Promise<TLSSocket>((resolve, reject) => {
    const socket = tlsConnect({
      socket: raw,
      // SNI takes names only; the certificate is checked against the URL's host either way.
      ...(isIP(target.host) ? {} : { servername: target.host }),
      host: target.host,
      rejectUnauthorized: !target.tlsInsecure,
      ...(target.ca ? { ca: target.ca } : {}),
    });
    socket.once('secureConnect', () => {
      socket.removeListener('error', reject);
      resolve(socket);
    });
    socket.once('error', (error) => {
      raw.destroy();
      reject(error);
    });
  });
}

/**
 * A connection: the socket first (guarded, or through the gateway; TLS), then ioredis's handshake on it
 * (HELLO 3 with the user and password, RESP2 and AUTH on servers before Redis 6; SELECT; CLIENT SETNAME).
 */
async function openConnection(
  target: RedisTarget,
  egress: EgressGuard,
  gateway: GatewayDial | undefined,
  deadline: number,
): Promise<RedisConnection> {
  const timeoutMs = Math.max(1, Math.min(CONNECT_TIMEOUT_MS, deadline - Date.now()));
  let socket: Socket;
  try {
    socket = await openSocket(target, egress, gateway, timeoutMs);
  } catch (error) {
    throw connectError(error, target);
  }
  const Connector = class extends AbstractConnector {
    constructor() {
      super(0);
    }
    override connect(): Promise<TLSSocket> {
      this.connecting = true;
      this.stream = socket;
      // ioredis's type names its streams Socket | TLSSocket; the socket is connected already.
      return Promise.resolve(socket as TLSSocket);
    }
  };
  const client = new Redis({
    Connector,
    lazyConnect: true,
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
    db: target.database,
    connectionName: 'kubeglue',
    disableClientInfo: true,
    enableReadyCheck: false,
    protocol: 3,
    replyMapping: 'resp3',
    stringNumbers: true,
    retryStrategy: null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    autoResubscribe: false,
  });
  // ioredis reports what failed the handshake (WRONGPASS…) as an event; connect() only says "closed".
  let failure: unknown;
  client.on('error', (error: unknown) => {
    failure ??= error;
  });
  const timer = setTimeout(() => {
    failure ??= new Error(`no answer to the handshake within ${timeoutMs} ms`);
    socket.destroy();
  }, timeoutMs);
  try {
    await client.connect();
  } catch (error) {
    socket.destroy();
    client.disconnect();
    throw connectError(failure ?? error, target);
  } finally {
    clearTimeout(timer);
  }
  return new RedisConnection(client, socket);
}

// ---------------------------------------------------------------------------------------------------
// Pools and the command table

/** What the server's command table says of a command (COMMAND INFO): its flags and its subcommands'. */
interface CommandInfo {
  flags: Set<string>;
  subcommands: Map<string, Set<string>>;
}

interface RedisPool {
  connections: ConnectionPool<RedisConnection>;
  /** COMMAND INFO answers by lower-case name (null: the server has no such command). */
  commands: Map<string, CommandInfo | null>;
}

const pools = new PoolRegistry<RedisPool>(POOL_BOUNDS.maxPools, (pool) => pool.connections.close());

const digest = (text: string | undefined) =>
  text === undefined ? '-' : createHash('sha256').update(text).digest('base64url');

/** Everything a connection depends on; the password and CA only as digests. */
function poolKey(target: RedisTarget, egress: EgressGuard, gateway: GatewayDial | undefined): string {
  return JSON.stringify([
    target.tls,
    target.host,
    target.port,
    target.database,
    target.username ?? null,
    digest(target.password),
    digest(target.ca),
    target.tlsInsecure,
    gateway?.key ?? egress.key,
  ]);
}

function poolFor(target: RedisTarget, egress: EgressGuard, gateway: GatewayDial | undefined): RedisPool {
  return pools.get(poolKey(target, egress, gateway), () => ({
    connections: new ConnectionPool<RedisConnection>({
      max: POOL_BOUNDS.connectionsPerPool,
      idleMs: POOL_BOUNDS.idleMs,
      open: (deadline) => openConnection(target, egress, gateway, deadline),
    }),
    commands: new Map(),
  }));
}

/** Closes every pool (shutdown, tests). */
export async function closeRedisPools(): Promise<void> {
  await pools.closeAll();
}

/** Connections open now, over all pools (tests). */
export function openRedisConnectionCount(): number {
  return pools.values().reduce((sum, pool) => sum + pool.connections.size, 0);
}

function flagsOf(value: unknown): Set<string> {
  return new Set(Array.isArray(value) ? value.map((flag) => String(flag).toLowerCase()) : []);
}

/** One COMMAND INFO entry: [name, arity, flags, first key, last key, step, ACL categories, tips, key specs, subcommands]. */
function commandInfo(entry: unknown): CommandInfo | null {
  if (!Array.isArray(entry)) return null;
  const subcommands = new Map<string, Set<string>>();
  for (const sub of Array.isArray(entry[9]) ? entry[9] : []) {
    if (Array.isArray(sub)) subcommands.set(String(sub[0]).toLowerCase(), flagsOf(sub[2]));
  }
  return { flags: flagsOf(entry[2]), subcommands };
}

/** Asks the server for the commands its table does not have cached yet. */
async function learnCommands(
  pool: RedisPool,
  connection: RedisConnection,
  target: RedisTarget,
  names: string[],
) {
  const missing = [...new Set(names.map((name) => name.toLowerCase()))].filter(
    (name) => !pool.commands.has(name),
  );
  if (missing.length === 0) return;
  let reply: unknown;
  try {
    reply = await connection.send('COMMAND', ['INFO', ...missing]);
  } catch (error) {
    const cause = error instanceof Error ? serverMessage(error) : String(error);
    throw new RedisStepError(
      'read-only',
      scrubSecrets(
        `Redis at ${target.label}: cannot read the server's command table (COMMAND INFO: ${cause}), which tells ` +
          'which commands only read; a step with modify: false needs it: allow the user COMMAND, or set modify: true',
        target.secrets,
      ),
      isReplyError(error) ? firstWord(cause) : codeOf(error),
    );
  }
  const entries = Array.isArray(reply) ? reply : [];
  missing.forEach((name, index) => {
    pool.commands.set(name, commandInfo(entries[index]));
  });
}

/**
 * Refuses, before anything is sent, a command the server does not flag `readonly` (or does not know): the
 * rule of `modify: false`. A container command (CONFIG, OBJECT, XINFO…) is judged by its subcommand.
 */
async function checkReadOnly(
  pool: RedisPool,
  connection: RedisConnection,
  target: RedisTarget,
  request: RedisRequest,
): Promise<void> {
  await learnCommands(
    pool,
    connection,
    target,
    request.commands.map((command) => command.name),
  );
  request.commands.forEach((command, index) => {
    const where = request.single ? '' : `command ${index + 1}: `;
    const info = pool.commands.get(command.name.toLowerCase());
    if (!info) {
      throw new RedisStepError(
        'unknown-command',
        `Redis at ${target.label}: ${where}unknown command '${command.name}' (the server's command table has no such command)`,
      );
    }
    let name = command.name;
    let flags = info.flags;
    if (info.subcommands.size > 0) {
      const sub = typeof command.args[0] === 'string' ? command.args[0].toLowerCase() : '';
      const subFlags = info.subcommands.get(`${command.name.toLowerCase()}|${sub}`);
      name = `${command.name} ${sub.toUpperCase()}`.trim();
      if (!subFlags) {
        throw new RedisStepError(
          'unknown-command',
          `Redis at ${target.label}: ${where}unknown subcommand '${name}' (the server's command table has no such subcommand)`,
        );
      }
      flags = subFlags;
    }
    if (flags.has('readonly') && !flags.has('write')) return;
    const described = flags.size > 0 ? [...flags].join(', ') : 'none';
    throw new RedisStepError(
      'read-only',
      `Redis at ${target.label}: ${where}${name} is not a read-only command (the server flags it: ${described}); ` +
        `the step has modify: false, which runs only commands the server flags readonly: set modify: true to run ${name}`,
    );
  });
}

// ---------------------------------------------------------------------------------------------------
// Execution

async function runCommands(
  connection: RedisConnection,
  target: RedisTarget,
  request: RedisRequest,
): Promise<JsonValue> {
  const { commands } = request;
  const where = (index: number) => (request.single ? '' : `command ${index + 1} of ${commands.length}: `);
  if (request.single) {
    const command = commands[0] as RedisCommand;
    try {
      return replyToJson(await connection.send(command.name, command.args));
    } catch (error) {
      throw commandError(error, target, command, '');
    }
  }
  if (!request.transaction) {
    // Sent back to back on the one connection; Redis answers in order.
    const settled = await Promise.allSettled(
      commands.map((command) => connection.send(command.name, command.args)),
    );
    const failed = settled.findIndex((outcome) => outcome.status === 'rejected');
    if (failed >= 0) {
      const error = commandError(
        (settled[failed] as PromiseRejectedResult).reason,
        target,
        commands[failed] as RedisCommand,
        where(failed),
      );
      if (error.kind === 'connection') throw error;
      throw new RedisStepError(
        error.kind,
        `${error.message}; the other commands of the pipeline ran (a pipeline is not a transaction: "transaction": true runs all or none)`,
        error.code,
      );
    }
    return settled.map((outcome) => replyToJson((outcome as PromiseFulfilledResult<unknown>).value));
  }
  const queued = [
    connection.send('MULTI', []),
    ...commands.map((command) => connection.send(command.name, command.args)),
  ];
  const exec = connection.send('EXEC', []);
  const settled = await Promise.allSettled(queued);
  const refused = settled.findIndex((outcome) => outcome.status === 'rejected');
  let replies: unknown;
  try {
    replies = await exec;
  } catch (error) {
    if (refused > 0) {
      // EXECABORT: a command was refused when queued (unknown, wrong arguments), so none ran.
      const cause = commandError(
        (settled[refused] as PromiseRejectedResult).reason,
        target,
        commands[refused - 1] as RedisCommand,
        where(refused - 1),
      );
      throw new RedisStepError(
        cause.kind,
        `${cause.message}; the transaction was discarded: no command ran`,
        cause.code,
      );
    }
    throw commandError(error, target, { name: 'EXEC', args: [] }, '');
  }
  const results = Array.isArray(replies) ? replies : [];
  const failed = results.findIndex((reply) => reply instanceof Error);
  if (failed >= 0) {
    const error = commandError(results[failed], target, commands[failed] as RedisCommand, where(failed));
    throw new RedisStepError(
      error.kind,
      `${error.message}; the other commands of the transaction ran (Redis does not roll back a transaction)`,
      error.code,
    );
  }
  return results.map(replyToJson);
}

/** Runs one Redis step and resolves with its reply (one command) or its replies (a pipeline) as JSON. */
export async function executeRedisStep(req: RedisStepRequest): Promise<JsonValue> {
  const request = parseRedisBodyOrThrow(req.body);
  const target = resolveRedisTarget(req.url, req.credentials);
  const stopped = {
    aborted: () =>
      new RedisStepError(
        'aborted',
        `Redis at ${target.label}: the run was cancelled; the step's connection was closed`,
      ),
    timeout: () =>
      new RedisStepError(
        'timeout',
        `Redis at ${target.label}: timed out: the run deadline was reached; the step's connection was closed, which ends a blocked command on the server`,
      ),
  };
  if (req.signal.aborted) throw stopped.aborted();
  if (Date.now() >= req.deadline) throw stopped.timeout();

  const pool = poolFor(target, req.egress ?? new EgressGuard(PERMISSIVE_EGRESS), req.gateway);
  const guard = watchdog(req.signal, req.deadline, stopped);
  let connection: RedisConnection | undefined;
  let reusable = false;
  try {
    connection = await pool.connections.lease(req.deadline, guard.fired);
    const leased = connection;
    const tooLarge = new Promise<never>((_, reject) => {
      leased.meter.start(req.maxDataBytes ?? Number.POSITIVE_INFINITY, (bytes, limit) => {
        reject(
          new RedisStepError(
            'too-large',
            `Redis at ${target.label}: the reply is larger than the step data limit of ${limit} bytes ` +
              `(KUBEGLUE_MAX_STEP_DATA_BYTES): the connection was closed after ${bytes} bytes`,
          ),
        );
        leased.destroy();
      });
    });
    tooLarge.catch(() => {});
    const work = (async () => {
      if (!req.modify) await checkReadOnly(pool, leased, target, request);
      return runCommands(leased, target, request);
    })();
    work.catch(() => {});
    const data = await Promise.race([work, guard.fired, tooLarge]);
    reusable = true;
    return data;
  } catch (error) {
    // A server's refusal leaves the connection as it was; anything else may have left replies in flight.
    reusable =
      error instanceof RedisStepError && ['read-only', 'unknown-command', 'command'].includes(error.kind);
    throw error;
  } finally {
    guard.dispose();
    if (connection) {
      connection.meter.stop();
      pool.connections.release(connection, reusable);
    }
  }
}

function parseRedisBodyOrThrow(body: unknown): RedisRequest {
  try {
    return parseRedisBody(body);
  } catch (error) {
    throw new RedisStepError('invalid-request', error instanceof Error ? error.message : String(error));
  }
}
