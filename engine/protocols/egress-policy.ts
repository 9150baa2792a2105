/**
 * The egress policy: which addresses an outbound connection of a step (or a notification) may reach.
 * Pure: decisions from an address and a host name; the sockets that ask live in egress-socket.ts.
 *
 * Order of the rules (the first that applies decides):
 * 1. a cloud metadata address is refused, whatever the lists say;
 * 2. a deny rule matching the host name or the address refuses (deny wins over every allow);
 * 3. a public unicast address is allowed;
 * 4. any other address (loopback, private, link-local, CGNAT, unique-local, reserved, a unix socket) is
 *    allowed when `privateDefault` is `allow`, or when an allow rule (global or the system's) matches.
 */
import { isIP } from 'node:net';
import { networkRuleProblem } from '../../contract/api/system.ts';
import { addressBytes, checkPublicAddress, inPrefix, metadataReason, parseIPv6 } from './egress-address.ts';

export type PrivateDefault = 'allow' | 'deny';

export interface EgressPolicy {
  /** Whether non-public addresses may be reached without an allow rule. */
  privateDefault: PrivateDefault;
  /** CIDRs, IPs, host names (`db.internal`, `*.corp.example`) or unix socket paths that may be reached. */
  allow: readonly string[];
  /** The same kinds of rules; never reachable, whatever allows them. */
  deny: readonly string[];
}

/** Only metadata addresses refused: the behaviour wherever no policy was configured (tests, tools). */
export const PERMISSIVE_EGRESS: EgressPolicy = { privateDefault: 'allow', allow: [], deny: [] };

/** The `code` of an egress refusal, also where it arrives as a plain error's code (pg's connection errors). */
export const EGRESS_REFUSED_CODE = 'ESSRFBLOCKED';

/** The connection was refused by the egress policy (permanent: retrying cannot help). */
export class SsrfBlockedError extends Error {
  readonly code = EGRESS_REFUSED_CODE;
  constructor(message: string) {
    super(message);
    this.name = 'SsrfBlockedError';
  }
}

/** The same error under the name the step protocols use. */
export const EgressRefusedError = SsrfBlockedError;

/**
 * The egress refusal behind `error`, if any: HTTP clients hand a connector's error on as the cause of
 * their own, or inside an AggregateError (one per address tried).
 */
export function egressRefusalIn(error: unknown): SsrfBlockedError | undefined {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    if (current instanceof SsrfBlockedError) return current;
    if (current instanceof AggregateError) {
      const inner = current.errors.find((e) => e instanceof SsrfBlockedError);
      if (inner) return inner as SsrfBlockedError;
    }
    current = current instanceof Error ? current.cause : undefined;
  }
  return undefined;
}

type Rule =
  | { kind: 'cidr'; text: string; bytes: number[]; bits: number }
  | { kind: 'host'; text: string; name: string; wildcard: boolean }
  | { kind: 'path'; text: string; path: string };

function normaliseHost(host: string): string {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return bare.toLowerCase().replace(/\.$/, '');
}

/** One rule, or a message saying why the text is not one (syntax: contract/api/system.ts networkRuleProblem). */
export function parseEgressRule(raw: string): Rule | string {
  const problem = networkRuleProblem(raw);
  if (problem) return problem;
  const text = raw.trim();
  if (text.startsWith('/')) return { kind: 'path', text, path: text };
  const [address = '', bitsText] = text.split('/');
  const family = isIP(address);
  if (family !== 0) {
    const max = family === 4 ? 32 : 128;
    const bytes = family === 4 ? address.split('.').map(Number) : (parseIPv6(address) ?? []);
    return { kind: 'cidr', text, bytes, bits: bitsText === undefined ? max : Number(bitsText) };
  }
  const name = normaliseHost(text);
  return name.startsWith('*.')
    ? { kind: 'host', text, name: name.slice(1), wildcard: true }
    : { kind: 'host', text, name, wildcard: false };
}

/** Problems of a list of rules (a System's `allowedNetworks`), one message per bad entry. */
export function egressRuleProblems(entries: readonly string[]): string[] {
  return entries.flatMap((entry) => {
    const rule = parseEgressRule(entry);
    return typeof rule === 'string' ? [rule] : [];
  });
}

function compile(entries: readonly string[]): Rule[] {
  return entries.flatMap((entry) => {
    const rule = parseEgressRule(entry);
    return typeof rule === 'string' ? [] : [rule];
  });
}

function matches(rule: Rule, host: string, address: string): boolean {
  switch (rule.kind) {
    case 'path':
      return address === rule.path;
    case 'host':
      return rule.wildcard ? host.endsWith(rule.name) && host.length > rule.name.length : host === rule.name;
    case 'cidr': {
      const parsed = addressBytes(address);
      if (!parsed) return false;
      // An IPv4 rule also covers the IPv6 forms that carry that IPv4 address.
      const bytes = rule.bytes.length === 4 ? parsed.v4 : parsed.v6;
      return bytes !== undefined && inPrefix(bytes, rule.bytes, rule.bits);
    }
  }
}

function describeTarget(host: string, address: string): string {
  return host === '' || host === address ? address : `${host} (${address})`;
}

const STEP_HINT =
  "private addresses are refused here; allow them with KUBEGLUE_EGRESS_ALLOW or the system's allowedNetworks";

/**
 * A policy ready to judge connections, optionally with extra allow rules (a System's allowedNetworks) that
 * apply only to the connections of steps using that system.
 */
export class EgressGuard {
  readonly policy: EgressPolicy;
  readonly extraAllow: readonly string[];
  /** Identifies the rules, so per-guard resources (HTTP agents, Postgres pools) are not shared across them. */
  readonly key: string;
  readonly #allow: Rule[];
  readonly #deny: Rule[];
  readonly #hint: string;

  /** `hint` tells, in a refusal of a private address, how to allow it. */
  constructor(policy: EgressPolicy, extraAllow: readonly string[] = [], hint = STEP_HINT) {
    this.policy = policy;
    this.extraAllow = extraAllow;
    this.key = JSON.stringify([policy.privateDefault, policy.allow, policy.deny, extraAllow]);
    this.#allow = compile([...policy.allow, ...extraAllow]);
    this.#deny = compile(policy.deny);
    this.#hint = hint;
  }

  /** The same policy with the given extra allow rules (this guard when they add nothing). */
  withAllow(extraAllow: readonly string[] | undefined): EgressGuard {
    const extra = extraAllow ?? [];
    if (extra.join(',') === this.extraAllow.join(',')) return this;
    return new EgressGuard(this.policy, extra, this.#hint);
  }

  /**
   * Undefined when a connection to `address` (an IP, or a unix socket path) for the host name `host` (as
   * the URL names it; the IP itself for IP literals) may be made; else the refusal, naming host, address
   * and class.
   */
  judge(host: string, address: string): SsrfBlockedError | undefined {
    const name = normaliseHost(host);
    const target = describeTarget(host, address);
    const isPath = address.startsWith('/');
    const metadata = isPath ? undefined : metadataReason(address);
    if (metadata) return new SsrfBlockedError(`refused to connect to ${target}: ${metadata}`);
    const denied = this.#deny.find((rule) => matches(rule, name, address));
    if (denied) {
      return new SsrfBlockedError(
        `refused to connect to ${target}: denied by KUBEGLUE_EGRESS_DENY (${denied.text})`,
      );
    }
    const reason = isPath ? 'a local (unix) socket' : checkPublicAddress(address);
    if (reason === undefined) return undefined;
    if (this.policy.privateDefault === 'allow') return undefined;
    if (this.#allow.some((rule) => matches(rule, name, address))) return undefined;
    return new SsrfBlockedError(`refused to connect to ${target}: ${reason} (${this.#hint})`);
  }
}
