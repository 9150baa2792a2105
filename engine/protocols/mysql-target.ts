/**
 * A MySQL step's connection settings: its URL, with the credentials filling in what the URL lacks, and the
 * TLS the URL asks for.
 */
import type mysql from 'mysql2';
import { type DataStoreScheme, decodedHost, parseDataStoreUrl } from './data-store-url.ts';
import { MysqlStepError } from './mysql-errors.ts';
import { normalisePem } from './pem.ts';

const MYSQL_URL: DataStoreScheme = { name: 'MySQL', schemes: ['mysql:', 'mariadb:'] };

/** MySQL's own `--ssl-mode` values; libpq's spellings (`require`, `verify-full`, …) are accepted too. */
export type MysqlTlsMode = 'disabled' | 'preferred' | 'required' | 'verify-ca' | 'verify-identity';

const TLS_MODES: Readonly<Record<string, MysqlTlsMode>> = {
  disabled: 'disabled',
  disable: 'disabled',
  preferred: 'preferred',
  prefer: 'preferred',
  required: 'required',
  require: 'required',
  verify_ca: 'verify-ca',
  'verify-ca': 'verify-ca',
  verify_identity: 'verify-identity',
  'verify-identity': 'verify-identity',
  'verify-full': 'verify-identity',
};

export interface ResolvedMysqlConnection {
  host: string;
  port: number;
  user: string | undefined;
  password: string | undefined;
  database: string | undefined;
  tls: MysqlTlsMode;
  ca: string | undefined;
  /** Text that must never appear in an error (the password). */
  secrets: string[];
  /** host:port/database, how messages name the system. */
  label: string;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '::1';
}

function tlsModeFrom(params: URLSearchParams, host: string): MysqlTlsMode {
  const given = params.get('ssl-mode') ?? params.get('sslMode') ?? params.get('sslmode');
  if (given !== null) {
    const mode = TLS_MODES[given.toLowerCase()];
    if (!mode) {
      throw new MysqlStepError(
        'invalid-request',
        `Unsupported ssl-mode '${given}' (use DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY)`,
      );
    }
    return mode;
  }
  const ssl = params.get('ssl');
  if (ssl === 'true' || ssl === '1') return 'required';
  if (ssl === 'false' || ssl === '0') return 'disabled';
  if (ssl !== null)
    throw new MysqlStepError('invalid-request', `Unsupported ssl '${ssl}' (use true or false)`);
  return isLoopback(host) ? 'disabled' : 'preferred';
}

/**
 * The login of a connection URL kept in the `url` credential (`mysql://user:password@host/db`), when it is
 * for the same server as the step's URL: a step on such a system may give its URL without the login.
 */
function credentialUrlLogin(
  url: string | undefined,
  host: string,
  port: number,
): { user: string; password: string | undefined } | undefined {
  if (!url) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (!MYSQL_URL.schemes.includes(parsed.protocol)) return undefined;
  const sameHost = decodedHost(parsed).toLowerCase() === host.toLowerCase();
  if (!sameHost || (parsed.port ? Number(parsed.port) : 3306) !== port || !parsed.username) return undefined;
  return {
    user: decodeURIComponent(parsed.username),
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
  };
}

/** Connection settings from the URL, the credentials filling in what the URL lacks. */
export function resolveMysqlConnection(
  url: string,
  credentials: Record<string, string>,
): ResolvedMysqlConnection {
  const parsed = parseDataStoreUrl(
    url,
    MYSQL_URL,
    (message) => new MysqlStepError('invalid-request', message),
  );
  const host = decodedHost(parsed);
  if (host === '') throw new MysqlStepError('invalid-request', 'The MySQL URL has no host');
  const port = parsed.port ? Number(parsed.port) : 3306;
  const login = credentialUrlLogin(credentials.url, host, port);
  const user =
    decodeURIComponent(parsed.username) ||
    credentials.username ||
    credentials.user ||
    login?.user ||
    undefined;
  const password = parsed.password
    ? decodeURIComponent(parsed.password)
    : (credentials.password ?? (user === login?.user ? login?.password : undefined));
  // A step URL relative to the system's (`/`) ends in a slash; the path names one database.
  const database = decodeURIComponent(parsed.pathname.replace(/^\/+|\/+$/g, '')) || undefined;
  if (database?.includes('/')) {
    throw new MysqlStepError('invalid-request', `The MySQL URL's path names one database, not '${database}'`);
  }
  return {
    host,
    port,
    user,
    password,
    database,
    tls: tlsModeFrom(parsed.searchParams, host),
    ca: credentials.ca ? normalisePem(credentials.ca) : undefined,
    secrets: password ? [password] : [],
    label: `${host}:${port}/${database ?? ''}`,
  };
}

export function sslOption(
  resolved: ResolvedMysqlConnection,
  tls: MysqlTlsMode,
): mysql.SslOptions | undefined {
  const ca = resolved.ca ? { ca: resolved.ca } : {};
  switch (tls) {
    case 'disabled':
      return undefined;
    case 'preferred':
    case 'required':
      // MySQL's semantics: encrypted, certificate not checked.
      return { rejectUnauthorized: false };
    case 'verify-ca':
      return { ...ca, rejectUnauthorized: true, verifyIdentity: false };
    case 'verify-identity':
      return { ...ca, rejectUnauthorized: true, verifyIdentity: true };
  }
}
