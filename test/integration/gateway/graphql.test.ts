/**
 * GraphQL steps take the HTTP path's network rules: under KUBEGLUE_EGRESS_PRIVATE=deny a step to a private
 * GraphQL server is refused before it connects, and a private system behind a real gateway agent process is
 * reached through its tunnel, with the system's token and the system URL's Host.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { useStarted } from '../../support/fixture.ts';
import { startAgent } from '../../support/gateway-agent.ts';
import { GRAPHQL_TOKEN, startGraphqlServer } from '../../support/graphql-server.ts';

const TUNNEL = 'corp-graphql';
const api = useTestApi({ KUBEGLUE_EGRESS_PRIVATE: 'deny', KUBEGLUE_GATEWAY_CONNECT_WAIT_MS: '1000' });
const server = useStarted(
  () => startGraphqlServer(),
  (started) => started.stop(),
);
const agent = useStarted(
  async () => {
    const started = await startAgent({
      tunnel_id: TUNNEL,
      server_url: api.url.replace('http://', 'ws://').replace('127.0.0.1', 'localhost'),
      api_key: TEST_ADMIN_KEY,
      targets: { tracker: new URL(server.url).host },
    });
    await started.waitFor(`tunnel '${TUNNEL}' registered`);
    return started;
  },
  async (started) => {
    await started.kill();
  },
);

const echo = (systemId: string) => ({
  id: `echo-${systemId}`,
  steps: [
    {
      id: 'q',
      config: {
        url: '/graphql',
        systemId,
        method: 'POST',
        graphql: { query: 'query ($text: String!) { echo(text: $text) }', variables: { text: 'through' } },
      },
    },
  ],
});

beforeAll(async () => {
  expect(agent.output()).toContain('registered');
  const credentials = { authType: 'bearer', credentials: { bearerToken: GRAPHQL_TOKEN } };
  const systems = [
    {
      id: 'private',
      url: 'http://tracker.corp.internal:8080',
      gateway: { tunnelId: TUNNEL, target: 'tracker' },
    },
    { id: 'direct', url: server.url },
  ];
  for (const system of systems) {
    const created = await api.call('POST', '/v1/systems', { body: { ...system, ...credentials } });
    expect(created.status, created.text).toBe(201);
    const saved = await api.call('POST', '/v1/tools', { body: echo(system.id) });
    expect(saved.status, saved.text).toBe(201);
  }
});

async function run(toolId: string): Promise<Run> {
  return (await api.call<Run>('POST', `/v1/tools/${toolId}/run`, { body: {} })).body;
}

describe('GraphQL steps and the network', () => {
  it("reach a private system through the gateway agent with the system's token", async () => {
    const mark = server.requests.length;
    const result = await run('echo-private');
    expect(result.status, result.error).toBe('success');
    expect(result.data).toEqual({ echo: 'through' });
    const [received] = server.requests.slice(mark);
    expect(received?.headers.host).toBe('tracker.corp.internal:8080');
    expect(received?.headers.authorization).toBe(`Bearer ${GRAPHQL_TOKEN}`);
  });

  it('are refused a private address without a gateway before anything is sent', async () => {
    const mark = server.requests.length;
    const result = await run('echo-direct');
    expect(result.status).toBe('failed');
    expect(result.error).toContain('refused to connect to 127.0.0.1: a loopback address');
    expect(server.requests.slice(mark)).toEqual([]);
  });
});
