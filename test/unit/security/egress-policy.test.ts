/**
 * The egress policy's decisions (pure) and the connect-time guard with a faked DNS answer: no network,
 * no DNS server, no hosts file needed.
 */
import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../../config/config.ts';
import { EgressGuard, type EgressPolicy, SsrfBlockedError } from '../../../engine/protocols/egress-policy.ts';
import { GuardedSocket, guardedLookup, type ResolveAll } from '../../../engine/protocols/egress-socket.ts';

const deny: EgressPolicy = { privateDefault: 'deny', allow: [], deny: [] };
const allow: EgressPolicy = { privateDefault: 'allow', allow: [], deny: [] };

function verdict(policy: EgressPolicy, host: string, address: string, extra: string[] = []): string {
  return new EgressGuard(policy, extra).judge(host, address)?.message ?? 'allowed';
}

/** A resolver that answers from a table, as a DNS server would. */
function fakeDns(table: Record<string, string[]>): ResolveAll {
  return (hostname, _options, callback) => {
    const answers = table[hostname];
    if (!answers) {
      callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
      return;
    }
    const addresses: LookupAddress[] = answers.map((address) => ({
      address,
      family: address.includes(':') ? 6 : 4,
    }));
    setImmediate(() => callback(null, addresses));
  };
}

describe('egress policy: metadata addresses', () => {
  it.each([
    '169.254.169.254',
    '169.254.170.2',
    '100.100.100.200',
    'fd00:ec2::254',
    '::ffff:169.254.169.254',
    '64:ff9b::a9fe:a9fe',
    '2002:a9fe:a9fe::1',
    // IPv4-compatible, SIIT and local-use NAT64 (RFC 8215) forms, at each RFC 6052 position.
    '::169.254.169.254',
    '[::169.254.169.254]',
    '::ffff:0:169.254.169.254',
    '[::ffff:0:169.254.169.254]',
    '64:ff9b:1::a9fe:a9fe',
    '[64:ff9b:1::a9fe:a9fe]',
    '64:ff9b:1:a9fe:a9:fe00::',
    // Teredo carries the client's IPv4 address inverted in the last 32 bits.
    '2001:0:4136:e378:8000:63bf:5601:5601',
  ])('refuses %s under every policy, whatever the allow lists say', (address) => {
    const everything: EgressPolicy = {
      privateDefault: 'allow',
      allow: ['169.254.0.0/16', '0.0.0.0/0', '::/0', 'metadata.internal'],
      deny: [],
    };
    for (const policy of [deny, allow, everything]) {
      expect(verdict(policy, 'metadata.internal', address, ['169.254.169.254', '::/0'])).toContain(
        'the cloud metadata address',
      );
    }
  });

  it('names the host, the address and the class', () => {
    expect(verdict(allow, 'metadata.internal', '169.254.169.254')).toBe(
      'refused to connect to metadata.internal (169.254.169.254): the cloud metadata address',
    );
    expect(verdict(allow, '169.254.169.254', '169.254.169.254')).toBe(
      'refused to connect to 169.254.169.254: the cloud metadata address',
    );
  });
});

describe('egress policy: private addresses', () => {
  it.each([
    ['127.0.0.1', 'a loopback address'],
    ['::1', 'a loopback address'],
    ['10.1.2.3', 'a private address'],
    ['192.168.1.1', 'a private address'],
    ['169.254.10.1', 'a link-local address'],
    ['100.64.0.1', 'a carrier-grade NAT address'],
    ['fd12::1', 'a private (unique local) address'],
    ['::ffff:10.0.0.1', 'a private address (IPv4 embedded in IPv6)'],
    ['64:ff9b::7f00:1', 'a loopback address (IPv4 embedded in IPv6)'],
    ['2002:c0a8:0101::1', 'a private address (IPv4 embedded in 6to4)'],
    ['::10.0.0.1', 'a private address (IPv4 embedded in IPv6)'],
    ['::ffff:0:7f00:1', 'a loopback address (IPv4 embedded in IPv6)'],
    ['64:ff9b:1::a00:1', 'a private address (IPv4 embedded in IPv6)'],
    ['0.0.0.0', 'the unspecified address'],
  ])('refuses %s as %s when privateDefault is deny, allows it when allow', (address, reason) => {
    expect(verdict(deny, address, address)).toContain(`refused to connect to ${address}: ${reason}`);
    expect(verdict(deny, address, address)).toContain('KUBEGLUE_EGRESS_ALLOW');
    expect(verdict(allow, address, address)).toBe('allowed');
  });

  it('allows public unicast addresses either way', () => {
    expect(verdict(deny, 'example.com', '93.184.215.14')).toBe('allowed');
    expect(verdict(deny, 'example.com', '2606:2800:21f:cb07:6820:80da:af6b:8b2c')).toBe('allowed');
    expect(verdict(deny, 'x', '::ffff:8.8.8.8')).toBe('allowed');
  });

  it('lets allow rules (CIDR, IP, exact host, *.suffix) make a private target reachable', () => {
    const policy: EgressPolicy = {
      privateDefault: 'deny',
      allow: ['10.1.0.0/16', '192.168.7.7', 'db.internal', '*.corp.example'],
      deny: [],
    };
    expect(verdict(policy, 'a', '10.1.200.3')).toBe('allowed');
    expect(verdict(policy, 'a', '::ffff:10.1.0.9')).toBe('allowed');
    expect(verdict(policy, 'a', '10.2.0.1')).toContain('a private address');
    expect(verdict(policy, 'a', '192.168.7.7')).toBe('allowed');
    expect(verdict(policy, 'DB.Internal.', '10.9.9.9')).toBe('allowed');
    expect(verdict(policy, 'api.corp.example', '10.9.9.9')).toBe('allowed');
    expect(verdict(policy, 'a.b.corp.example', '10.9.9.9')).toBe('allowed');
    expect(verdict(policy, 'corp.example', '10.9.9.9')).toContain('refused');
    expect(verdict(policy, 'evilcorp.example', '10.9.9.9')).toContain('refused');
  });

  it('applies a system allowlist only where it is given', () => {
    expect(verdict(deny, 'pg.internal', '10.0.0.5', ['10.0.0.0/24'])).toBe('allowed');
    expect(verdict(deny, 'pg.internal', '10.0.0.5')).toContain('refused');
  });

  it('lets deny win over every allow, for public addresses too', () => {
    const policy: EgressPolicy = {
      privateDefault: 'allow',
      allow: ['10.0.0.0/8', 'internal.example'],
      deny: ['10.96.0.0/12', '*.svc.cluster.local', '93.184.215.0/24'],
    };
    expect(verdict(policy, 'x', '10.96.0.1', ['10.96.0.1'])).toBe(
      'refused to connect to x (10.96.0.1): denied by KUBEGLUE_EGRESS_DENY (10.96.0.0/12)',
    );
    expect(verdict(policy, 'api.default.svc.cluster.local', '10.0.0.1')).toContain('KUBEGLUE_EGRESS_DENY');
    expect(verdict(policy, 'example.com', '93.184.215.14')).toContain('KUBEGLUE_EGRESS_DENY');
    expect(verdict(policy, 'x', '10.1.0.1')).toBe('allowed');
  });

  it('judges unix socket paths as local sockets; an allow rule may name the path', () => {
    expect(verdict(deny, '/var/run/postgresql', '/var/run/postgresql')).toContain('a local (unix) socket');
    expect(verdict(allow, '/tmp/s', '/tmp/s')).toBe('allowed');
    const named: EgressPolicy = { ...deny, allow: ['/var/run/postgresql/.s.PGSQL.5432'] };
    expect(verdict(named, 'x', '/var/run/postgresql/.s.PGSQL.5432')).toBe('allowed');
  });
});

describe('egress policy: settings', () => {
  it('reads the three settings, with the deployment default for the private flag', () => {
    expect(loadSettings('runner', {}).egress).toEqual({ privateDefault: 'deny', allow: [], deny: [] });
    expect(loadSettings('embedded', {}).egress).toEqual({ privateDefault: 'allow', allow: [], deny: [] });
    expect(
      loadSettings('runner', {
        KUBEGLUE_EGRESS_PRIVATE: 'allow',
        KUBEGLUE_EGRESS_ALLOW: '10.0.0.0/8, db.internal',
        KUBEGLUE_EGRESS_DENY: '*.svc.cluster.local',
      }).egress,
    ).toEqual({
      privateDefault: 'allow',
      allow: ['10.0.0.0/8', 'db.internal'],
      deny: ['*.svc.cluster.local'],
    });
  });

  it('refuses an invalid entry naming the setting and the entry', () => {
    expect(() => loadSettings('embedded', { KUBEGLUE_EGRESS_ALLOW: '10.0.0.0/40' })).toThrow(
      "KUBEGLUE_EGRESS_ALLOW: '10.0.0.0/40' has an invalid prefix length (0-32)",
    );
    expect(() => loadSettings('embedded', { KUBEGLUE_EGRESS_DENY: 'http://x' })).toThrow(
      'KUBEGLUE_EGRESS_DENY',
    );
    expect(() => loadSettings('embedded', { KUBEGLUE_EGRESS_PRIVATE: 'maybe' })).toThrow(
      "KUBEGLUE_EGRESS_PRIVATE: must be 'allow' or 'deny'",
    );
  });
});

describe('egress guard at connect time (faked DNS)', () => {
  const dns = fakeDns({
    'metadata.internal': ['169.254.169.254'],
    'mixed.example': ['93.184.215.14', '10.0.0.7'],
    'public.example': ['93.184.215.14'],
  });

  function lookup(policy: EgressPolicy, host: string): Promise<unknown> {
    return new Promise((resolve) => {
      guardedLookup(new EgressGuard(policy), dns)(host, { all: true }, (error, addresses) =>
        resolve(error ?? addresses),
      );
    });
  }

  it('refuses a name that resolves to the metadata address, naming both', async () => {
    const error = await lookup(allow, 'metadata.internal');
    expect(error).toBeInstanceOf(SsrfBlockedError);
    expect((error as Error).message).toBe(
      'refused to connect to metadata.internal (169.254.169.254): the cloud metadata address',
    );
  });

  it('refuses a name when any of its addresses is refused (no picking the public one)', async () => {
    expect(await lookup(deny, 'mixed.example')).toBeInstanceOf(SsrfBlockedError);
    expect(await lookup(allow, 'mixed.example')).toEqual([
      { address: '93.184.215.14', family: 4 },
      { address: '10.0.0.7', family: 4 },
    ]);
  });

  it('fails a GuardedSocket before any packet is sent, with the refusal as its error', async () => {
    const socket = new GuardedSocket(new EgressGuard(allow), { resolve: dns });
    const error = await new Promise<Error>((resolve) => {
      socket.once('error', resolve);
      socket.once('connect', () => resolve(new Error('connected')));
      socket.connect(80, 'metadata.internal');
    });
    expect(error).toBeInstanceOf(SsrfBlockedError);
    expect(error.message).toContain('metadata.internal (169.254.169.254)');
  });

  it('refuses IP literals and unix socket paths without a lookup', async () => {
    const refused = (connect: (socket: GuardedSocket) => void, policy: EgressPolicy) =>
      new Promise<Error>((resolve) => {
        const socket = new GuardedSocket(new EgressGuard(policy), { resolve: dns });
        socket.once('error', resolve);
        connect(socket);
      });
    expect((await refused((s) => s.connect(80, '169.254.169.254'), allow)).message).toContain('metadata');
    expect(
      (await refused((s) => s.connect({ port: 80, host: '::ffff:a9fe:a9fe' }), allow)).message,
    ).toContain('metadata');
    expect((await refused((s) => s.connect('/var/run/postgresql/.s.PGSQL.5432'), deny)).message).toContain(
      'a local (unix) socket',
    );
  });
});
