/**
 * The body of a Redis step: one command `{"command": "HGETALL", "args": ["user:1"]}`, or a pipeline
 * `{"commands": [["GET", "a"], ["INCR", "b"]], "transaction": false}` (true: MULTI … EXEC). Every argument
 * is one element of an array and is sent as one RESP bulk string, so no value (a template's, an input's)
 * can add an argument or a command: nothing is ever split out of a string. Commands that change the
 * connection itself (its database, user, protocol, mode) are refused: connections are pooled per system,
 * database and credentials, and the next step must find its connection as the URL and credentials made it.
 */
import { z } from 'zod';
import { JsonValue } from '../../contract/json.ts';

/** One command as sent: its name (upper case) and its arguments. */
export interface RedisCommand {
  name: string;
  args: Array<string | Buffer>;
}

export interface RedisRequest {
  commands: RedisCommand[];
  /** The body was one command: the step's data is its reply, not an array of replies. */
  single: boolean;
  /** MULTI … EXEC around the commands. */
  transaction: boolean;
}

export class RedisBodyError extends Error {
  override name = 'RedisBodyError';
}

/** The most commands one step sends. */
export const MAX_COMMANDS = 10_000;

/** How binary arguments are written, and how binary reply values come back: `{"$base64": "…"}`. */
export const BASE64_MARKER = '$base64';

const SHAPE_HINT =
  'a Redis body is {"command": "GET", "args": ["key"]} or {"commands": [["GET", "a"], ["INCR", "b"]], "transaction": false}';

/** Module commands have dots (JSON.GET, FT.SEARCH); no spaces: arguments go in args. */
const COMMAND_NAME = /^[A-Za-z][A-Za-z0-9_.:-]*$/;

/**
 * Commands that change what the connection is (database, identity, protocol, reply mode, pub/sub or
 * replica mode): the next step on the pooled connection would inherit it. MULTI/EXEC are written as
 * `"transaction": true`.
 */
const CONNECTION_COMMANDS: Readonly<Record<string, string>> = {
  SELECT: 'the database is the URL path (redis://host:6379/2)',
  SWAPDB: 'it exchanges whole databases under every client',
  AUTH: 'the user and password come from the system',
  HELLO: 'kubeglue chooses the protocol and user when it connects',
  RESET: 'it resets the connection kubeglue keeps for the next steps',
  QUIT: 'kubeglue closes its connections itself',
  MULTI: 'write "transaction": true with the commands instead',
  EXEC: 'write "transaction": true with the commands instead',
  DISCARD: 'write "transaction": true with the commands instead',
  WATCH: 'a step cannot read between WATCH and MULTI; write "transaction": true',
  UNWATCH: 'a step cannot read between WATCH and MULTI; write "transaction": true',
  SUBSCRIBE: 'pub/sub turns the connection into a subscriber',
  PSUBSCRIBE: 'pub/sub turns the connection into a subscriber',
  SSUBSCRIBE: 'pub/sub turns the connection into a subscriber',
  UNSUBSCRIBE: 'pub/sub turns the connection into a subscriber',
  PUNSUBSCRIBE: 'pub/sub turns the connection into a subscriber',
  SUNSUBSCRIBE: 'pub/sub turns the connection into a subscriber',
  MONITOR: 'it turns the connection into an endless stream',
  SYNC: 'it turns the connection into a replica',
  PSYNC: 'it turns the connection into a replica',
  REPLCONF: 'it turns the connection into a replica',
  READONLY: 'it changes the connection (cluster replicas)',
  READWRITE: 'it changes the connection (cluster replicas)',
};

/** CLIENT subcommands that change the connection they are sent on. */
const CONNECTION_CLIENT_SUBCOMMANDS = new Set([
  'REPLY',
  'SETNAME',
  'SETINFO',
  'TRACKING',
  'CACHING',
  'NO-EVICT',
  'NO-TOUCH',
]);

const Base64Arg = z.strictObject({ [BASE64_MARKER]: z.base64() });

const SingleBody = z.strictObject({
  command: z.string(),
  args: z.array(z.unknown()).optional(),
});

const PipelineBody = z.strictObject({
  commands: z
    .array(z.array(z.unknown()).min(1, 'a command needs at least its name'))
    .min(1)
    .max(MAX_COMMANDS),
  transaction: z.boolean().optional(),
});

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map(
      (issue) =>
        `${issue.path.map((key) => (typeof key === 'number' ? `[${key}]` : `.${String(key)}`)).join('') || 'body'}: ${issue.message}`,
    )
    .join('; ');
}

/** One argument as sent; an array (a template that rendered a list) gives one argument per element. */
function argumentsOf(value: unknown, where: string): Array<string | Buffer> {
  if (typeof value === 'string') return [value];
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RedisBodyError(`${where}: a number argument must be finite`);
    return [String(value)];
  }
  if (Array.isArray(value)) {
    return value.flatMap((item, index) => {
      if (Array.isArray(item)) {
        throw new RedisBodyError(
          `${where}[${index}]: an argument list may hold strings and numbers, not lists`,
        );
      }
      return argumentsOf(item, `${where}[${index}]`);
    });
  }
  const binary = Base64Arg.safeParse(value);
  if (binary.success) return [Buffer.from(binary.data[BASE64_MARKER], 'base64')];
  const what = value === null ? 'null' : typeof value === 'object' ? 'an object' : typeof value;
  throw new RedisBodyError(
    `${where}: expected a string, a number or {"${BASE64_MARKER}": "…"} for binary, not ${what} ` +
      '(write an object as JSON text, e.g. with JSON.stringify in a transform step)',
  );
}

function commandOf(name: unknown, args: unknown[], where: string): RedisCommand {
  if (typeof name !== 'string' || name.trim() === '') {
    throw new RedisBodyError(`${where}: the command name must be a non-empty string`);
  }
  const trimmed = name.trim();
  if (!COMMAND_NAME.test(trimmed)) {
    throw new RedisBodyError(
      `${where}: '${trimmed.slice(0, 40)}' is not a command name; give the command's arguments in its array, one element each`,
    );
  }
  const upper = trimmed.toUpperCase();
  const refused = CONNECTION_COMMANDS[upper];
  if (refused) throw new RedisBodyError(`${where}: ${upper} is not allowed in a step: ${refused}`);
  const flat = args.flatMap((arg, index) => argumentsOf(arg, `${where} argument ${index + 1}`));
  const sub = typeof flat[0] === 'string' ? flat[0].toUpperCase() : undefined;
  if (upper === 'CLIENT' && sub !== undefined && CONNECTION_CLIENT_SUBCOMMANDS.has(sub)) {
    throw new RedisBodyError(
      `${where}: CLIENT ${sub} is not allowed in a step: it changes the connection kubeglue keeps for the next steps`,
    );
  }
  return { name: upper, args: flat };
}

function fromObject(value: unknown): RedisRequest {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new RedisBodyError(`Invalid Redis step body: ${SHAPE_HINT}`);
  }
  if ('commands' in value) {
    const parsed = PipelineBody.safeParse(value);
    if (!parsed.success)
      throw new RedisBodyError(`Invalid Redis step body: ${describeIssues(parsed.error)}; ${SHAPE_HINT}`);
    const commands = parsed.data.commands.map(([name, ...args], index) =>
      commandOf(name, args, `commands[${index}]`),
    );
    return { commands, single: false, transaction: parsed.data.transaction ?? false };
  }
  const parsed = SingleBody.safeParse(value);
  if (!parsed.success)
    throw new RedisBodyError(`Invalid Redis step body: ${describeIssues(parsed.error)}; ${SHAPE_HINT}`);
  return {
    commands: [commandOf(parsed.data.command, parsed.data.args ?? [], 'command')],
    single: true,
    transaction: false,
  };
}

/** The step body (an object, or that object as JSON text) as the commands to send. */
export function parseRedisBody(body: unknown): RedisRequest {
  if (typeof body === 'string') {
    const trimmed = body.trim();
    if (!trimmed.startsWith('{')) {
      throw new RedisBodyError(
        `Invalid Redis step body: a command line is not parsed, so no value can ever become a second command or argument; ${SHAPE_HINT}`,
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(trimmed);
    } catch {
      // The parser's message quotes the input, which may hold values.
      throw new RedisBodyError('Invalid Redis step body: it starts with "{" but is not valid JSON');
    }
    return fromObject(JsonValue.parse(json));
  }
  if (body === undefined)
    throw new RedisBodyError(`Invalid Redis step body: the step has no body; ${SHAPE_HINT}`);
  return fromObject(body);
}
