/**
 * SSRF guard for outbound requests the service makes on a user's behalf (completion notifications, and steps
 * when configured): only public unicast addresses may be reached.
 *
 * Two layers: `assertPublicUrl` resolves the host up front and gives a clear reason, and `guardedDispatcher`
 * re-checks at connect time the address the socket actually uses, so a DNS answer that changes between the
 * check and the connection (rebinding) or a redirect to an internal host cannot slip through.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOptions } from 'node:dns';
import { lookup as dnsLookupAll } from 'node:dns/promises';
import type { Socket } from 'node:net';
import { isIP, isIPv4 } from 'node:net';
import { Agent, buildConnector } from 'undici';

/** The request was refused because its target is not a public address (permanent: retrying cannot help). */
export class SsrfBlockedError extends Error {
  readonly code = 'ESSRFBLOCKED';
  constructor(message: string) {
    super(message);
    this.name = 'SsrfBlockedError';
  }
}

export interface SsrfOptions {
  /** Skip the address checks (local development and tests). The URL scheme is still checked. */
  allowPrivate: boolean;
}

interface Range {
  /** Address bytes, 4 for IPv4 and 16 for IPv6. */
  prefix: number[];
  bits: number;
  reason: string;
}

function v4(cidr: string, reason: string): Range {
  const [address = '', bits = '32'] = cidr.split('/');
  return { prefix: parseIPv4(address), bits: Number(bits), reason };
}

function v6(cidr: string, reason: string): Range {
  const [address = '', bits = '128'] = cidr.split('/');
  const bytes = parseIPv6(address);
  if (!bytes) throw new Error(`bad range ${cidr}`);
  return { prefix: bytes, bits: Number(bits), reason };
}

// Most specific first: the first match names the reason.
const IPV4_BLOCKED: readonly Range[] = [
  v4('169.254.169.254/32', 'the cloud metadata address'),
  v4('0.0.0.0/32', 'the unspecified address'),
  v4('0.0.0.0/8', 'a "this network" address'),
  v4('10.0.0.0/8', 'a private address'),
  v4('100.64.0.0/10', 'a carrier-grade NAT address'),
  v4('127.0.0.0/8', 'a loopback address'),
  v4('169.254.0.0/16', 'a link-local address'),
  v4('172.16.0.0/12', 'a private address'),
  v4('192.0.0.0/24', 'a reserved address (IETF protocol assignments)'),
  v4('192.0.2.0/24', 'a reserved address (documentation)'),
  v4('192.168.0.0/16', 'a private address'),
  v4('198.18.0.0/15', 'a reserved address (benchmarking)'),
  v4('198.51.100.0/24', 'a reserved address (documentation)'),
  v4('203.0.113.0/24', 'a reserved address (documentation)'),
  v4('224.0.0.0/4', 'a multicast address'),
  v4('255.255.255.255/32', 'the broadcast address'),
  v4('240.0.0.0/4', 'a reserved address'),
];

const IPV6_BLOCKED: readonly Range[] = [
  v6('::/128', 'the unspecified address'),
  v6('::1/128', 'a loopback address'),
  // IPv4-compatible addresses (deprecated); the IPv4-mapped and translated forms are checked as IPv4 below.
  v6('::/96', 'a reserved address (IPv4-compatible IPv6)'),
  v6('64:ff9b:1::/48', 'a local-use NAT64 address'),
  v6('100::/64', 'a discard-only address'),
  v6('2001:db8::/32', 'a reserved address (documentation)'),
  v6('fc00::/7', 'a private (unique local) address'),
  v6('fe80::/10', 'a link-local address'),
  v6('fec0::/10', 'a site-local address'),
  v6('ff00::/8', 'a multicast address'),
];

function parseIPv4(address: string): number[] {
  return address.split('.').map(Number);
}

/** 16 bytes, or undefined when the text is not an IPv6 address. A zone (`%eth0`) is ignored. */
function parseIPv6(text: string): number[] | undefined {
  let address = text.split('%')[0] ?? '';
  if (isIP(address) !== 6) return undefined;
  // A dotted IPv4 tail ("::ffff:1.2.3.4") becomes its two hex groups.
  const lastColon = address.lastIndexOf(':');
  const tail = address.slice(lastColon + 1);
  if (isIPv4(tail)) {
    const [a = 0, b = 0, c = 0, d = 0] = parseIPv4(tail);
    address = `${address.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [left = '', right] = address.split('::');
  const leftGroups = left === '' ? [] : left.split(':');
  const rightGroups = right === undefined || right === '' ? [] : right.split(':');
  const fill = right === undefined ? 0 : 8 - leftGroups.length - rightGroups.length;
  const groups = [...leftGroups, ...Array<string>(Math.max(fill, 0)).fill('0'), ...rightGroups];
  if (groups.length !== 8) return undefined;
  return groups.flatMap((group) => {
    const value = Number.parseInt(group, 16);
    return [value >> 8, value & 0xff];
  });
}

function inRange(bytes: readonly number[], range: Range): boolean {
  if (bytes.length !== range.prefix.length) return false;
  let bits = range.bits;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((bytes[i] ?? 0) & mask) !== ((range.prefix[i] ?? 0) & mask)) return false;
  }
  return true;
}

function checkIPv4Bytes(bytes: readonly number[]): string | undefined {
  return IPV4_BLOCKED.find((range) => inRange(bytes, range))?.reason;
}

function startsWith(bytes: readonly number[], prefix: readonly number[]): boolean {
  return prefix.every((value, i) => bytes[i] === value);
}

/** Everything public in IPv6 is inside 2000::/3; the rest is reserved or local. */
const GLOBAL_UNICAST = v6('2000::/3', 'global unicast');
const MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
const NAT64_PREFIX = [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0];
const SIX_TO_FOUR_PREFIX = [0x20, 0x02];

/**
 * Why `ip` must not be reached, or undefined when it is a public unicast address. Text that is not an IP
 * address is refused too. IPv6 forms that embed an IPv4 address (mapped `::ffff:a.b.c.d`, NAT64
 * `64:ff9b::/96`, 6to4 `2002::/16`) are judged by the embedded address.
 */
export function checkPublicAddress(ip: string): string | undefined {
  const text = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (isIPv4(text)) return checkIPv4Bytes(parseIPv4(text));
  const bytes = parseIPv6(text);
  if (!bytes) return 'not an IP address';
  if (startsWith(bytes, MAPPED_PREFIX) || startsWith(bytes, NAT64_PREFIX)) {
    const reason = checkIPv4Bytes(bytes.slice(12));
    return reason && `${reason} (IPv4 embedded in IPv6)`;
  }
  if (startsWith(bytes, SIX_TO_FOUR_PREFIX)) {
    const reason = checkIPv4Bytes(bytes.slice(2, 6));
    return reason && `${reason} (IPv4 embedded in 6to4)`;
  }
  const reason = IPV6_BLOCKED.find((range) => inRange(bytes, range))?.reason;
  if (reason) return reason;
  return inRange(bytes, GLOBAL_UNICAST) ? undefined : 'a reserved address (not global unicast)';
}

function blockedError(host: string, address: string, reason: string): SsrfBlockedError {
  const target = host === address ? address : `${host} (${address})`;
  return new SsrfBlockedError(`refused to connect to ${target}: ${reason}`);
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * Throws SsrfBlockedError unless `url` is http(s) and every address its host resolves to is public. A DNS
 * failure is thrown as the resolver's own error (it may be temporary). The message names the host, never the
 * path or query, which may carry tokens.
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
  if (options.allowPrivate) return;
  const host = unbracket(parsed.hostname);
  if (isIP(host)) {
    const reason = checkPublicAddress(host);
    if (reason) throw blockedError(host, host, reason);
    return;
  }
  const addresses = await dnsLookupAll(host, { all: true, verbatim: true });
  if (addresses.length === 0) throw new SsrfBlockedError(`${host} resolves to no address`);
  for (const { address } of addresses) {
    const reason = checkPublicAddress(address);
    if (reason) throw blockedError(host, address, reason);
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for net/tls.connect that refuses the connection when any resolved address is not public. It
 * answers in the form the caller asked for (`all` is what Happy Eyeballs uses).
 */
function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  const all: LookupAllOptions = { ...options, all: true };
  dnsLookup(hostname, all, (error, addresses) => {
    if (error) {
      callback(error, []);
      return;
    }
    for (const { address } of addresses) {
      const reason = checkPublicAddress(address);
      if (reason) {
        callback(blockedError(hostname, address, reason), []);
        return;
      }
    }
    if (options.all) {
      callback(null, addresses);
      return;
    }
    const first = addresses[0];
    if (!first)
      callback(Object.assign(new Error(`${hostname} resolves to no address`), { code: 'ENOTFOUND' }), []);
    else callback(null, first.address, first.family);
  });
}

export interface GuardedDispatcherOptions extends SsrfOptions {
  /** Connect timeout in milliseconds (default 10 s). */
  connectTimeoutMs?: number;
}

/**
 * An undici Agent that only connects to public addresses (unless allowPrivate): IP-literal hosts are checked
 * before connecting, names are checked in the socket's own DNS lookup, and the connected socket's remote
 * address is checked once more. Redirects followed through this agent are therefore guarded as well.
 */
export function guardedDispatcher(options: GuardedDispatcherOptions): Agent {
  const timeout = options.connectTimeoutMs ?? 10_000;
  if (options.allowPrivate) {
    return new Agent({ connect: { timeout }, keepAliveTimeout: 10_000 });
  }
  const connectPublic = buildConnector({ timeout, lookup: guardedLookup });
  const connector: buildConnector.connector = (connectOptions, callback) => {
    const host = unbracket(connectOptions.hostname);
    if (isIP(host)) {
      const reason = checkPublicAddress(host);
      if (reason) {
        callback(blockedError(host, host, reason), null);
        return;
      }
    }
    connectPublic(connectOptions, (error, socket) => {
      if (error || !socket) {
        callback(error ?? new Error('connection failed'), null);
        return;
      }
      const remote = (socket as Socket).remoteAddress;
      const reason = remote === undefined ? 'the connected address is unknown' : checkPublicAddress(remote);
      if (reason) {
        socket.destroy();
        callback(blockedError(host, remote ?? '?', reason), null);
        return;
      }
      callback(null, socket);
    });
  };
  return new Agent({ connect: connector, keepAliveTimeout: 10_000 });
}
