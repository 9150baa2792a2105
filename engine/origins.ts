/**
 * Origins for the rule "a system's credentials go only to the system's own origins": the origin of its
 * base URL (scheme, host, port), the origin of a dataStore connection URL in its credentials, and the
 * origins listed in `extraOrigins`. Pure.
 */
import { stepScheme } from '../contract/step-protocols.ts';
import type { ResolvedSystem } from '../contract/wire/run-order.ts';

const SAME_PROTOCOL: Readonly<Record<string, string>> = { 'postgresql:': 'postgres:', 'mariadb:': 'mysql:' };

/**
 * `scheme://host:port` with the default port written out, or undefined for text that is not an absolute
 * URL. For Postgres the host and port are the ones pg connects to (`?host=` and `?port=` win, as in
 * libpq), so a query parameter cannot move credentials to another server unnoticed.
 */
export function originOf(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  // Two names of one protocol are one origin: a system's mysql:// credentials also go to mariadb:// steps.
  const scheme = SAME_PROTOCOL[parsed.protocol.toLowerCase()] ?? parsed.protocol.toLowerCase();
  let host = parsed.hostname.toLowerCase();
  let port = parsed.port;
  if (scheme === 'postgres:') {
    host = (parsed.searchParams.get('host') ?? decodeURIComponent(host)).toLowerCase();
    port ||= parsed.searchParams.get('port') ?? '';
  }
  if (host === '') return undefined;
  return `${scheme}//${host}:${port || stepScheme(scheme)?.defaultPort || ''}`;
}

/** Every origin the system's credentials may be sent to; empty for a system without any. */
export function systemOrigins(system: ResolvedSystem): Set<string> {
  const candidates = [system.url, system.credentials.url, ...(system.extraOrigins ?? [])];
  const origins = new Set<string>();
  for (const candidate of candidates) {
    const origin = candidate === undefined ? undefined : originOf(candidate);
    if (origin) origins.add(origin);
  }
  return origins;
}

/** How a system's origins read in a message. */
export function describeOrigins(origins: ReadonlySet<string>): string {
  return origins.size === 0 ? 'it has none: no base URL and no extraOrigins' : [...origins].join(', ');
}
