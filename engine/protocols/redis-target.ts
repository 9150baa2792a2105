/** A Redis step's connection settings: its URL, with the credentials filling in what the URL lacks. */
import { parseDataStoreUrl } from './data-store-url.ts';
import { RedisStepError } from './redis-errors.ts';

export const MAX_DATABASE = 15;

export interface RedisTarget {
  tls: boolean;
  /** Host without IPv6 brackets. */
  host: string;
  port: number;
  database: number;
  username: string | undefined;
  password: string | undefined;
  ca: string | undefined;
  tlsInsecure: boolean;
  /** `redis://host:port/db` without userinfo: how messages name the system. */
  label: string;
  secrets: string[];
}

function invalid(message: string): RedisStepError {
  return new RedisStepError('invalid-request', message);
}

function decoded(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** The URL and the credentials (which fill what the URL lacks) as connection settings. */
export function resolveRedisTarget(url: string, credentials: Record<string, string>): RedisTarget {
  const parsed = parseDataStoreUrl(url, { name: 'Redis', schemes: ['redis:', 'rediss:'] }, invalid);
  const tls = parsed.protocol === 'rediss:';
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw invalid('Invalid Redis URL: no host');
  const port = parsed.port === '' ? 6379 : Number(parsed.port);
  const path = parsed.pathname.replace(/^\/+|\/+$/g, '');
  const database = path === '' ? 0 : Number(path);
  const label = `${parsed.protocol}//${parsed.host}/${path === '' ? 0 : path}`;
  if (!/^\d{1,2}$/.test(path === '' ? '0' : path) || database > MAX_DATABASE) {
    throw invalid(
      `Invalid Redis URL ${label}: the database is a number from 0 to ${MAX_DATABASE} after the port (redis://host:6379/2; default 0)`,
    );
  }
  for (const key of parsed.searchParams.keys()) {
    if (key !== 'tlsInsecure') {
      throw invalid(
        `Invalid Redis URL ${label}: unknown parameter '${key}' (a Redis URL takes only tlsInsecure)`,
      );
    }
  }
  const password = parsed.password ? decoded(parsed.password) : credentials.password || undefined;
  // A user without a password is Redis's `default` user: the username goes only with a password.
  const username =
    password === undefined ? undefined : decoded(parsed.username) || credentials.username || undefined;
  const ca = credentials.ca ? credentials.ca.replace(/\\n/g, '\n') : undefined;
  return {
    tls,
    host,
    port,
    database,
    username,
    password,
    ca,
    tlsInsecure: parsed.searchParams.get('tlsInsecure') === 'true',
    label,
    secrets: password ? [password] : [],
  };
}
