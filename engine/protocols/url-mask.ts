/**
 * URLs as errors may show them: a userinfo password (or a lone username, usually a token) and
 * credential-like query values replaced by `***`.
 */

const SENSITIVE_QUERY_EXACT = new Set(['key', 'sig', 'code', 'pass', 'auth', 'hash', 'jwt']);
const SENSITIVE_QUERY_PARTS = [
  'token',
  'secret',
  'passw',
  'pwd',
  'apikey',
  'signature',
  'credential',
  'session',
  'authorization',
];

/** Query parameter names that conventionally carry credentials (api_key, access_token, X-Amz-Signature…). */
export function isSensitiveQueryName(name: string): boolean {
  const normalized = name.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (SENSITIVE_QUERY_EXACT.has(normalized)) return true;
  if (normalized.endsWith('key') || normalized.endsWith('auth')) return true;
  return SENSITIVE_QUERY_PARTS.some((part) => normalized.includes(part));
}

/**
 * The URL as it may appear in errors: the userinfo password (or a lone username, usually a token)
 * and credential-like query values replaced by `***`.
 */
export function maskUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url.replace(/\/\/[^/@\s]*@/, '//***@');
  }
  if (parsed.password) parsed.password = '***';
  else if (parsed.username) parsed.username = '***';
  if (parsed.search) {
    const masked = new URLSearchParams();
    let changed = false;
    for (const [name, value] of parsed.searchParams) {
      const sensitive = isSensitiveQueryName(name);
      changed ||= sensitive;
      masked.append(name, sensitive ? '***' : value);
    }
    // Re-serialising changes the encoding of the other values, so only when something was masked.
    if (changed) parsed.search = masked.toString();
  }
  return parsed.toString();
}
