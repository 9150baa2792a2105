/**
 * The log line of every kubeglue process: one JSON object per line, for every role (api, operator,
 * runner, embedded, agent) and the engine workers, from the first line on (a warning about an unknown
 * setting, an invalid configuration) to the last (a fatal error). A log collector parses each line
 * without knowing which role wrote it.
 *
 * The shape is pino's, which fastify's request log in the api and embedded roles already writes:
 * `{"level":30,"time":1764126000000,"pid":7,"hostname":"kubeglue-api-…","role":"api","msg":"…"}`, with
 * pino's numeric levels (20 debug, 30 info, 40 warn, 50 error, 60 fatal). Debug and info go to stdout,
 * warn and worse to stderr.
 */
import { hostname } from 'node:os';

export const LOG_LEVELS = { debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;
export type LogLevel = keyof typeof LOG_LEVELS;
/** More keys of a line (a warning's code); never secrets, as the message. */
export type LogFields = Record<string, string | number | boolean | undefined>;

type Write = (message: string, fields?: LogFields) => void;

/** Called as a function it logs at info, as the `log: (line) => void` options of every module expect. */
export interface Logger extends Write {
  debug: Write;
  info: Write;
  warn: Write;
  error: Write;
  fatal: Write;
}

export interface LoggerOptions {
  /** Where debug and info lines go (default process.stdout). */
  stdout?: { write(text: string): unknown };
  /** Where warn, error and fatal lines go (default process.stderr). */
  stderr?: { write(text: string): unknown };
  now?: () => number;
}

const HOST = hostname();

/** One line, newline included. */
export function formatLogLine(
  level: LogLevel,
  role: string,
  message: string,
  fields: LogFields = {},
  time = Date.now(),
): string {
  const line = {
    level: LOG_LEVELS[level],
    time,
    pid: process.pid,
    hostname: HOST,
    role,
    ...fields,
    msg: message,
  };
  return `${JSON.stringify(line)}\n`;
}

export function createLogger(role: string, options: LoggerOptions = {}): Logger {
  const now = options.now ?? Date.now;
  const writer =
    (level: LogLevel): Write =>
    (message, fields) => {
      const stream =
        LOG_LEVELS[level] >= LOG_LEVELS.warn
          ? (options.stderr ?? process.stderr)
          : (options.stdout ?? process.stdout);
      stream.write(formatLogLine(level, role, message, fields, now()));
    };
  const info = writer('info');
  return Object.assign((message: string, fields?: LogFields) => info(message, fields), {
    debug: writer('debug'),
    info,
    warn: writer('warn'),
    error: writer('error'),
    fatal: writer('fatal'),
  });
}

let warningsLogged = false;

/**
 * Process warnings (`process.emitWarning`: Node's deprecations and experimental features, a library's
 * own) as warn lines. Node prints them as plain text (`(node:7) Warning: …`) through a 'warning'
 * listener of its own, which this replaces; a process calls it once, as it starts.
 */
export function logProcessWarnings(log: Logger): void {
  if (warningsLogged) return;
  warningsLogged = true;
  // Node's own switches for silence stay in force (it installs no printer then: nothing to replace).
  const options = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  if (process.env.NODE_NO_WARNINGS === '1' || options.includes('--no-warnings')) return;
  process.removeAllListeners('warning');
  process.on('warning', (warning: Error & { code?: string }) => {
    log.warn(`${warning.name}: ${warning.message}`, warning.code ? { code: warning.code } : {});
  });
}
