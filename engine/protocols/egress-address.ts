/**
 * What kind of address an IP is, for the egress guard. Pure: no DNS, no sockets.
 *
 * IPv6 forms that embed an IPv4 address are judged by the embedded address, because that is where a
 * translating network delivers the packets: IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`,
 * SIIT `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::/96` and the local-use NAT64 prefix `64:ff9b:1::/48` (at every
 * RFC 6052 position a /48–/96 prefix inside it can use), 6to4 `2002::/16` and Teredo `2001::/32`.
 */
import { isIP, isIPv4 } from 'node:net';

interface Range {
  /** Address bytes, 4 for IPv4 and 16 for IPv6. */
  prefix: number[];
  bits: number;
  reason: string;
}

export function parseIPv4(address: string): number[] {
  return address.split('.').map(Number);
}

/** 16 bytes, or undefined when the text is not an IPv6 address. A zone (`%eth0`) is ignored. */
export function parseIPv6(text: string): number[] | undefined {
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

/** Whether `bytes` lies in the prefix `prefix`/`bits` (both of the same family). */
export function inPrefix(bytes: readonly number[], prefix: readonly number[], bits: number): boolean {
  if (bytes.length !== prefix.length) return false;
  let left = bits;
  for (let i = 0; left > 0; i++, left -= 8) {
    const mask = left >= 8 ? 0xff : (0xff << (8 - left)) & 0xff;
    if (((bytes[i] ?? 0) & mask) !== ((prefix[i] ?? 0) & mask)) return false;
  }
  return true;
}

const METADATA = 'the cloud metadata address';

/**
 * Instance metadata and credential endpoints of the clouds (AWS IMDS and its IPv6 form, ECS task
 * credentials, EKS Pod Identity, GCE's IPv6 metadata server, Alibaba, Azure WireServer, Oracle Classic).
 * Reaching one from a step would hand out the node's cloud credentials, so no setting allows it.
 */
const METADATA_RANGES: readonly Range[] = [
  v4('169.254.169.254/32', METADATA),
  v4('169.254.170.2/32', `${METADATA} (ECS task credentials)`),
  v4('169.254.170.23/32', `${METADATA} (EKS Pod Identity)`),
  v4('100.100.100.200/32', METADATA),
  v4('168.63.129.16/32', `${METADATA} (Azure WireServer)`),
  v4('192.0.0.192/32', METADATA),
  v6('fd00:ec2::254/128', METADATA),
  v6('fd00:ec2::23/128', `${METADATA} (EKS Pod Identity)`),
  v6('fd20:ce::254/128', METADATA),
];

// Most specific first: the first match names the reason.
const IPV4_NOT_PUBLIC: readonly Range[] = [
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

const IPV6_NOT_PUBLIC: readonly Range[] = [
  v6('::/128', 'the unspecified address'),
  v6('::1/128', 'a loopback address'),
  v6('100::/64', 'a discard-only address'),
  v6('2001:db8::/32', 'a reserved address (documentation)'),
  v6('fc00::/7', 'a private (unique local) address'),
  v6('fe80::/10', 'a link-local address'),
  v6('fec0::/10', 'a site-local address'),
  v6('ff00::/8', 'a multicast address'),
];

const IPV4_COMPATIBLE = v6('::/96', 'a reserved address (IPv4-compatible IPv6)');

/** Everything public in IPv6 is inside 2000::/3; the rest is reserved or local. */
const GLOBAL_UNICAST = v6('2000::/3', 'global unicast');

function startsWith(bytes: readonly number[], prefix: readonly number[]): boolean {
  return prefix.every((value, i) => bytes[i] === value);
}

function unbracket(ip: string): string {
  return ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
}

/** An address as bytes: `v4` for IPv4 and for IPv6 forms embedding one, `v6` for any IPv6. */
export interface AddressBytes {
  v4?: number[];
  v6?: number[];
  /**
   * Further IPv4 addresses the IPv6 address may carry where a prefix admits several layouts (the local-use
   * NAT64 prefix); each is judged too, so the strictest reading wins.
   */
  alsoV4?: number[][];
  /** How the IPv4 address was embedded, for messages. */
  embedding?: 'IPv6' | '6to4' | 'Teredo';
}

const zeros = (n: number): number[] => Array<number>(n).fill(0);

/** IPv6 prefixes whose last 32 bits are an IPv4 address: mapped, SIIT (translated), NAT64 well-known. */
const LAST_32_PREFIXES: readonly number[][] = [
  [...zeros(10), 0xff, 0xff],
  [...zeros(8), 0xff, 0xff, 0, 0],
  [0, 0x64, 0xff, 0x9b, ...zeros(8)],
];
const LOCAL_NAT64_PREFIX = [0, 0x64, 0xff, 0x9b, 0, 1];
const SIX_TO_FOUR_PREFIX = [0x20, 0x02];
const TEREDO_PREFIX = [0x20, 0x01, 0, 0];

/**
 * The IPv4 address at each RFC 6052 position for prefixes of 48, 56, 64 and 96 bits (bits 64–71 are the
 * reserved "u" octet, skipped).
 */
function rfc6052Candidates(bytes: readonly number[]): number[][] {
  const at = (...indexes: number[]) => indexes.map((i) => bytes[i] ?? 0);
  return [at(12, 13, 14, 15), at(6, 7, 9, 10), at(7, 9, 10, 11), at(9, 10, 11, 12)];
}

/** Undefined when the text is not an IP address. */
export function addressBytes(ip: string): AddressBytes | undefined {
  const text = unbracket(ip);
  if (isIPv4(text)) return { v4: parseIPv4(text) };
  const bytes = parseIPv6(text);
  if (!bytes) return undefined;
  if (LAST_32_PREFIXES.some((prefix) => startsWith(bytes, prefix))) {
    return { v6: bytes, v4: bytes.slice(12), embedding: 'IPv6' };
  }
  // IPv4-compatible (deprecated, ::/96); `::` and `::1` are the unspecified and loopback addresses.
  if (startsWith(bytes, zeros(12)) && !bytes.slice(12, 15).every((b) => b === 0)) {
    return { v6: bytes, v4: bytes.slice(12), embedding: 'IPv6' };
  }
  if (startsWith(bytes, LOCAL_NAT64_PREFIX)) {
    const [first = [], ...rest] = rfc6052Candidates(bytes);
    return { v6: bytes, v4: first, alsoV4: rest, embedding: 'IPv6' };
  }
  if (startsWith(bytes, SIX_TO_FOUR_PREFIX)) return { v6: bytes, v4: bytes.slice(2, 6), embedding: '6to4' };
  // Teredo: the client's IPv4 address is the last 32 bits, inverted.
  if (startsWith(bytes, TEREDO_PREFIX)) {
    return { v6: bytes, v4: bytes.slice(12).map((b) => b ^ 0xff), embedding: 'Teredo' };
  }
  return { v6: bytes };
}

function firstMatch(bytes: readonly number[] | undefined, ranges: readonly Range[]): string | undefined {
  if (!bytes) return undefined;
  return ranges.find((range) => inPrefix(bytes, range.prefix, range.bits))?.reason;
}

function embedded(reason: string | undefined, parsed: AddressBytes): string | undefined {
  if (!reason || !parsed.embedding) return reason;
  return `${reason} (IPv4 embedded in ${parsed.embedding})`;
}

/** Why `ip` is a cloud metadata address, or undefined. */
export function metadataReason(ip: string): string | undefined {
  const parsed = addressBytes(ip);
  if (!parsed) return undefined;
  for (const v4 of [parsed.v4, ...(parsed.alsoV4 ?? [])]) {
    const reason = embedded(firstMatch(v4, METADATA_RANGES), parsed);
    if (reason) return reason;
  }
  return firstMatch(parsed.v6 && !parsed.v4 ? parsed.v6 : undefined, METADATA_RANGES);
}

/**
 * Why `ip` is not a public unicast address, or undefined when it is one. Text that is not an IP address is
 * refused too. Metadata addresses are named as such.
 */
export function checkPublicAddress(ip: string): string | undefined {
  const parsed = addressBytes(ip);
  if (!parsed) return 'not an IP address';
  const metadata = metadataReason(ip);
  if (metadata) return metadata;
  if (parsed.v4) {
    for (const v4 of [parsed.v4, ...(parsed.alsoV4 ?? [])]) {
      const reason = embedded(firstMatch(v4, IPV4_NOT_PUBLIC), parsed);
      if (reason) return reason;
    }
    // Nothing routes IPv4-compatible addresses (deprecated), whatever public address they carry.
    return parsed.v6 && inPrefix(parsed.v6, IPV4_COMPATIBLE.prefix, IPV4_COMPATIBLE.bits)
      ? IPV4_COMPATIBLE.reason
      : undefined;
  }
  const bytes = parsed.v6 ?? [];
  const reason = firstMatch(bytes, IPV6_NOT_PUBLIC);
  if (reason) return reason;
  return inPrefix(bytes, GLOBAL_UNICAST.prefix, GLOBAL_UNICAST.bits)
    ? undefined
    : 'a reserved address (not global unicast)';
}
