import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assertPublicUrl,
  checkPublicAddress,
  guardedDispatcher,
  SsrfBlockedError,
} from '../../../engine/protocols/egress.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';

describe('checkPublicAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.0.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['169.254.0.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['0.1.2.3', 'this network'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['169.254.169.254', 'metadata'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['0:0:0:0:0:ffff:c0a8:0101', 'private'],
    ['64:ff9b::192.168.1.1', 'private'],
    ['2002:7f00:0001::1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['::8.8.8.8', 'IPv4-compatible'],
    ['::169.254.169.254', 'metadata'],
    ['::ffff:0:169.254.169.254', 'metadata'],
    ['64:ff9b:1::a9fe:a9fe', 'metadata'],
    ['[::1]', 'loopback'],
    ['fec0::1', 'site-local'],
    ['2001:db8::1', 'documentation'],
    ['fe00::1', 'not global unicast'],
    ['4000::1', 'not global unicast'],
  ])('blocks %s as %s', (ip, reason) => {
    expect(checkPublicAddress(ip)).toContain(reason);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '172.15.255.255',
    '172.32.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '169.253.255.255',
    '192.169.0.1',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:0808:0808::1',
  ])('allows the public address %s', (ip) => {
    expect(checkPublicAddress(ip)).toBeUndefined();
  });

  it.each(['localhost', 'example.com', '', '1.2.3', '1.2.3.256', '::g'])(
    'refuses %j, which is not an IP',
    (text) => {
      expect(checkPublicAddress(text)).toBe('not an IP address');
    },
  );
});

describe('assertPublicUrl', () => {
  it.each([
    ['http://127.0.0.1:8080/hook', 'loopback'],
    ['https://[::1]/hook', 'loopback'],
    ['http://169.254.169.254/latest/meta-data/', 'metadata'],
    ['http://[::ffff:10.0.0.1]/', 'private'],
    ['http://localhost:9/hook', 'loopback'],
    ['ftp://8.8.8.8/file', 'only http and https'],
    ['file:///etc/passwd', 'only http and https'],
    ['not a url', 'not a valid URL'],
  ])('refuses %s', async (url, reason) => {
    const error = await assertPublicUrl(url, { allowPrivate: false }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SsrfBlockedError);
    expect((error as Error).message).toContain(reason);
  });

  it('never puts the path or query of the URL into its message', async () => {
    const error = await assertPublicUrl('http://127.0.0.1/hooks/secret-token?key=hunter22', {
      allowPrivate: false,
    }).catch((e: unknown) => e as Error);
    expect(error?.message).not.toContain('secret-token');
    expect(error?.message).not.toContain('hunter22');
  });

  it('accepts public IP literals', async () => {
    await expect(assertPublicUrl('https://8.8.8.8/hook', { allowPrivate: false })).resolves.toBeUndefined();
    await expect(
      assertPublicUrl('http://[2606:4700::1111]:8443/', { allowPrivate: false }),
    ).resolves.toBeUndefined();
  });

  it('lets private hosts through with allowPrivate but still checks the scheme', async () => {
    await expect(assertPublicUrl('http://localhost:9/hook', { allowPrivate: true })).resolves.toBeUndefined();
    await expect(assertPublicUrl('gopher://localhost/', { allowPrivate: true })).rejects.toThrow(
      'only http and https',
    );
  });
});

describe('guardedDispatcher', () => {
  let target: HttpTarget;
  beforeAll(async () => {
    target = await startHttpTarget();
    target.route('GET', '/ok', { body: { ok: true } });
  });
  afterAll(async () => {
    await target.stop();
  });

  async function refusal(url: string): Promise<unknown> {
    const dispatcher = guardedDispatcher({ allowPrivate: false });
    try {
      const response = await request(url, { dispatcher });
      await response.body.dump();
      return undefined;
    } catch (error) {
      return error;
    } finally {
      await dispatcher.close();
    }
  }

  it('refuses to connect to 127.0.0.1', async () => {
    target.reset();
    const error = await refusal(`${target.url}/ok`);
    expect(error).toBeInstanceOf(SsrfBlockedError);
    expect((error as Error).message).toContain('loopback');
    expect(target.count('/ok')).toBe(0);
  });

  it('refuses a host name that resolves to a loopback address', async () => {
    target.reset();
    const port = new URL(target.url).port;
    const error = await refusal(`http://localhost:${port}/ok`);
    expect(error).toBeInstanceOf(SsrfBlockedError);
    expect(target.count('/ok')).toBe(0);
  });

  it('connects to private addresses when allowPrivate is set', async () => {
    const dispatcher = guardedDispatcher({ allowPrivate: true });
    try {
      const response = await request(`${target.url}/ok`, { dispatcher });
      expect(response.statusCode).toBe(200);
      expect(await response.body.json()).toEqual({ ok: true });
    } finally {
      await dispatcher.close();
    }
  });
});
