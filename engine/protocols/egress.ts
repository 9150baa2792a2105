/**
 * The egress guard as completion notifications use it: only public unicast addresses (or, with
 * allowPrivate, everything but the cloud metadata addresses) may be reached.
 *
 * Two layers: `assertPublicUrl` resolves the host up front and gives a clear reason, and `guardedDispatcher`
 * re-checks at connect time the address the socket actually uses, so a DNS answer that changes between the
 * check and the connection (rebinding) or a redirect to an internal host cannot slip through.
 *
 * Steps use the same rules with configurable lists (egress-policy.ts, egress-socket.ts).
 */
import { lookup as dnsLookupAll } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Agent } from 'undici';
import { EgressGuard, type EgressPolicy, SsrfBlockedError } from './egress-policy.ts';
import { egressConnector } from './egress-socket.ts';

export { checkPublicAddress } from './egress-address.ts';
export { EgressRefusedError, egressRefusalIn, SsrfBlockedError } from './egress-policy.ts';

export interface SsrfOptions {
  /** Allow loopback and private addresses (local development and tests); metadata addresses stay refused. */
  allowPrivate: boolean;
}

function notificationGuard(options: SsrfOptions): EgressGuard {
  const policy: EgressPolicy = {
    privateDefault: options.allowPrivate ? 'allow' : 'deny',
    allow: [],
    deny: [],
  };
  return new EgressGuard(
    policy,
    [],
    'notifications reach only public addresses unless KUBEGLUE_NOTIFY_ALLOW_PRIVATE=true',
  );
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * Throws SsrfBlockedError unless `url` is http(s) and every address its host resolves to may be reached. A
 * DNS failure is thrown as the resolver's own error (it may be temporary). The message names the host, never
 * the path or query, which may carry tokens.
 */
export async function assertPublicUrl(url: string | URL, options: SsrfOptions): Promise<void> {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    throw new SsrfBlockedError('not a valid URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new SsrfBlockedError(`only http and https URLs are allowed, not ${parsed.protocol.slice(0, -1)}`);
  }
  const guard = notificationGuard(options);
  const host = unbracket(parsed.hostname);
  if (isIP(host)) {
    const refusal = guard.judge(host, host);
    if (refusal) throw refusal;
    return;
  }
  // With allowPrivate only metadata addresses are refused; the connection itself checks those.
  if (options.allowPrivate) return;
  const addresses = await dnsLookupAll(host, { all: true, verbatim: true });
  if (addresses.length === 0) throw new SsrfBlockedError(`${host} resolves to no address`);
  for (const { address } of addresses) {
    const refusal = guard.judge(host, address);
    if (refusal) throw refusal;
  }
}

export interface GuardedDispatcherOptions extends SsrfOptions {
  /** Connect timeout in milliseconds (default 10 s). */
  connectTimeoutMs?: number;
}

/**
 * An undici Agent whose every connection passes the guard: IP-literal hosts are checked before connecting,
 * names in the socket's own DNS lookup, and the connected socket's remote address once more.
 */
export function guardedDispatcher(options: GuardedDispatcherOptions): Agent {
  const guard = notificationGuard(options);
  const connect = egressConnector(guard, { timeoutMs: options.connectTimeoutMs ?? 10_000 });
  return new Agent({ connect, keepAliveTimeout: 10_000 });
}
