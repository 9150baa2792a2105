import type { ResolvedSystem } from './types.ts';

function hasHeader(headers: Record<string, string>, name: string): boolean {
  const lower = name.toLowerCase();
  return Object.keys(headers).some((key) => key.toLowerCase() === lower);
}

/**
 * Adds the system's credentials to an HTTP request the way its auth method prescribes, unless the
 * step already sets that header or parameter itself (the step's own templates win).
 */
export function applySystemAuth(
  system: ResolvedSystem,
  credentials: Record<string, string>,
  headers: Record<string, string>,
  query: Array<[string, string]>,
): void {
  const bearer = (token: string | undefined) => {
    if (token && !hasHeader(headers, 'authorization')) headers.Authorization = `Bearer ${token}`;
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
        if (!hasHeader(headers, credentials.apiKeyHeader)) headers[credentials.apiKeyHeader] = key;
      } else if (credentials.apiKeyQueryParam) {
        const name = credentials.apiKeyQueryParam;
        if (!query.some(([existing]) => existing === name)) query.push([name, key]);
      } else {
        bearer(key);
      }
      break;
    }
    case 'basic':
      if (credentials.username !== undefined && !hasHeader(headers, 'authorization')) {
        const pair = `${credentials.username}:${credentials.password ?? ''}`;
        headers.Authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
      }
      break;
    case 'customHeaders':
      for (const [name, value] of Object.entries(credentials)) {
        if (!hasHeader(headers, name)) headers[name] = value;
      }
      break;
    default:
      break;
  }
}
