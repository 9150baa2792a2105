import type { ApiKeyPlacement } from '../contract/api/system.ts';
import type { ResolvedSystem } from '../contract/wire/run-order.ts';

function hasHeader(headers: Record<string, string>, name: string): boolean {
  const lower = name.toLowerCase();
  return Object.keys(headers).some((key) => key.toLowerCase() === lower);
}

/** The key where the system's documentation puts it (a step's own header or parameter of that name wins). */
function placeDocumented(
  placement: ApiKeyPlacement,
  key: string,
  headers: Record<string, string>,
  query: Array<[string, string]>,
  carriers: AuthCarriers,
): void {
  switch (placement.in) {
    case 'header':
      if (!hasHeader(headers, placement.name)) {
        headers[placement.name] = `${placement.prefix ?? ''}${key}`;
        carriers.headers.push(placement.name);
      }
      break;
    case 'query':
      if (!query.some(([existing]) => existing === placement.name)) {
        query.push([placement.name, key]);
        carriers.query.push(placement.name);
      }
      break;
    case 'cookie': {
      const existing = Object.keys(headers).find((name) => name.toLowerCase() === 'cookie');
      const pair = `${placement.name}=${key}`;
      if (existing) headers[existing] = `${headers[existing]}; ${pair}`;
      else headers.Cookie = pair;
      carriers.headers.push(existing ?? 'Cookie');
      break;
    }
  }
}

/** The headers and query parameters that carry the system's credentials after applySystemAuth. */
export interface AuthCarriers {
  headers: string[];
  query: string[];
}

/**
 * Adds the system's credentials to an HTTP request the way its auth method prescribes, unless the
 * step already sets that header or parameter itself (the step's own templates win). Returns the names
 * it set, so a redirect to another origin can drop them.
 */
export function applySystemAuth(
  system: ResolvedSystem,
  credentials: Record<string, string>,
  headers: Record<string, string>,
  query: Array<[string, string]>,
): AuthCarriers {
  const carriers: AuthCarriers = { headers: [], query: [] };
  const setHeader = (name: string, value: string) => {
    headers[name] = value;
    carriers.headers.push(name);
  };
  const bearer = (token: string | undefined) => {
    if (token && !hasHeader(headers, 'authorization')) setHeader('Authorization', `Bearer ${token}`);
  };
  switch (system.authType) {
    case 'bearer':
      bearer(credentials.bearerToken);
      break;
    case 'botToken':
      bearer(credentials.botToken);
      break;
    case 'oauth':
      bearer(credentials.accessToken);
      break;
    case 'apiKey': {
      const key = credentials.apiKey;
      if (!key) break;
      if (credentials.apiKeyHeader) {
        if (!hasHeader(headers, credentials.apiKeyHeader)) setHeader(credentials.apiKeyHeader, key);
      } else if (credentials.apiKeyQueryParam) {
        const name = credentials.apiKeyQueryParam;
        if (!query.some(([existing]) => existing === name)) {
          query.push([name, key]);
          carriers.query.push(name);
        }
      } else if (system.apiKeyPlacement) {
        placeDocumented(system.apiKeyPlacement, key, headers, query, carriers);
      } else {
        bearer(key);
      }
      break;
    }
    case 'basic':
      if (credentials.username !== undefined && !hasHeader(headers, 'authorization')) {
        const pair = `${credentials.username}:${credentials.password ?? ''}`;
        setHeader('Authorization', `Basic ${Buffer.from(pair).toString('base64')}`);
      }
      break;
    case 'customHeaders':
      for (const [name, value] of Object.entries(credentials)) {
        if (!hasHeader(headers, name)) setHeader(name, value);
      }
      break;
    default:
      break;
  }
  return carriers;
}
