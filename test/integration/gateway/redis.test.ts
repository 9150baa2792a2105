/**
 * A private Redis behind a real gateway agent process: the engine may not connect to private addresses
 * (KUBEGLUE_EGRESS_PRIVATE=deny), the system's host name does not resolve, and the agent dials the real
 * redis-server on loopback, plain and TLS (checked against the URL's host name, with the system's CA).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { type AgentProcess, startAgent } from '../../support/gateway-agent.ts';
import { REDIS_PASSWORD, redisServerMissing, useRedisServer } from '../../support/redis-server.ts';

const TUNNEL = 'corp-cache';
const missing = redisServerMissing();

describe.skipIf(missing)('a private Redis behind a gateway agent', () => {
  const api = useTestApi({ KUBEGLUE_EGRESS_PRIVATE: 'deny', KUBEGLUE_GATEWAY_CONNECT_WAIT_MS: '1000' });
  const redis = useRedisServer();
  let agent: AgentProcess | undefined;

  const run = async (toolId: string) =>
    (await api.call<Run>('POST', `/v1/tools/${toolId}/run`, { body: {} })).body;

  beforeAll(async () => {
    await redis.admin().set('greeting', 'through the tunnel');
    agent = await startAgent({
      tunnel_id: TUNNEL,
      server_url: api.url.replace('http://', 'ws://').replace('127.0.0.1', 'localhost'),
      api_key: TEST_ADMIN_KEY,
      targets: {
        cache: { address: `127.0.0.1:${redis.port}`, protocol: 'redis' },
        securecache: { address: `127.0.0.1:${redis.tlsPort}`, protocol: 'redis' },
      },
    });
    await agent.waitFor(`tunnel '${TUNNEL}' registered`);
    const systems = [
      {
        id: 'cache',
        url: 'redis://cache.corp.internal:6379/0',
        authType: 'dataStore',
        credentials: { password: REDIS_PASSWORD },
        gateway: { tunnelId: TUNNEL, target: 'cache' },
      },
      {
        // The test certificate names localhost; the agent dials 127.0.0.1.
        id: 'securecache',
        url: 'rediss://localhost:6380/0',
        authType: 'dataStore',
        credentials: { password: REDIS_PASSWORD, ca: redis.ca },
        gateway: { tunnelId: TUNNEL, target: 'securecache' },
      },
      {
        id: 'direct',
        url: `${redis.url}/0`,
        authType: 'dataStore',
        credentials: { password: REDIS_PASSWORD },
      },
    ];
    for (const system of systems) {
      const created = await api.call('POST', '/v1/systems', { body: system });
      expect(created.status, created.text).toBe(201);
    }
    for (const systemId of ['cache', 'securecache', 'direct']) {
      const created = await api.call('POST', '/v1/tools', {
        body: {
          id: `${systemId}-get`,
          steps: [
            { id: 'get', config: { url: '/', systemId, body: { command: 'GET', args: ['greeting'] } } },
          ],
        },
      });
      expect(created.status, created.text).toBe(201);
    }
  }, 60_000);

  afterAll(async () => {
    await agent?.kill();
  });

  it('lists the target as a Redis one', async () => {
    const gateway = await api.call<{ targets: Array<{ name: string; protocol: string }> }>(
      'GET',
      `/v1/gateways/${TUNNEL}`,
    );
    expect(gateway.body.targets).toEqual(
      expect.arrayContaining([
        { name: 'cache', protocol: 'redis' },
        { name: 'securecache', protocol: 'redis' },
      ]),
    );
  });

  it('runs a Redis step through the tunnel, plain and TLS', async () => {
    for (const toolId of ['cache-get', 'securecache-get']) {
      const result = await run(toolId);
      expect(result.status, result.error).toBe('success');
      expect(result.data).toBe('through the tunnel');
    }
  });

  it('does not reach the same server directly: the engine may not connect to private addresses', async () => {
    const result = await run('direct-get');
    expect(result.status).toBe('failed');
    expect(result.error).toContain(
      `Redis at ${redis.url}/0: cannot connect: refused to connect to 127.0.0.1`,
    );
  });
});
