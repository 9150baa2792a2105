/**
 * Issue 19, item 8: a tunnel id belongs to the API key that first registered it. A second agent with
 * another key that may host gateways registering the same id is refused; the owner's agent stays
 * connected and a run's request (with its Authorization header) still reaches the owner's target. An
 * admin can release the id.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { useTestApi } from '../../support/embedded.ts';
import { type AgentProcess, startAgent } from '../../support/gateway-agent.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';

const TUNNEL = 'corp-eu';
const TOKEN = 'private-crm-bearer-token-0123456789';

const api = useTestApi({ KUBEGLUE_EGRESS_PRIVATE: 'deny', KUBEGLUE_GATEWAY_CONNECT_WAIT_MS: '1000' });
/** The private system's real server, behind the owner's agent. */
let owned: HttpTarget;
/** What the intruder's agent would send the traffic to. */
let intruding: HttpTarget;
const agents: AgentProcess[] = [];

async function agentFor(apiKey: string, target: HttpTarget): Promise<AgentProcess> {
  const agent = await startAgent({
    tunnel_id: TUNNEL,
    server_url: api.url.replace('http://', 'ws://').replace('127.0.0.1', 'localhost'),
    api_key: apiKey,
    targets: { crm: target.url.replace('http://', '') },
  });
  agents.push(agent);
  return agent;
}

async function hostKey(name: string): Promise<string> {
  const created = await api.call<{ key: string }>('POST', '/v1/api-keys', {
    body: { name, scopes: ['gateways:host'] },
  });
  expect(created.status, created.text).toBe(201);
  return created.body.key;
}

async function runWho(): Promise<Run> {
  return (await api.call<Run>('POST', '/v1/tools/who/run', { body: {} })).body;
}

beforeAll(async () => {
  // The system's host name does not resolve and private addresses are refused: only the tunnel reaches it.
  owned = await startHttpTarget();
  intruding = await startHttpTarget();
  owned.route('GET', '/who', { body: { reached: 'owner' } });
  intruding.route('GET', '/who', { body: { reached: 'intruder' } });
  const system = await api.call('POST', '/v1/systems', {
    body: {
      id: 'crm',
      url: 'http://crm.corp.internal:8080',
      gateway: { tunnelId: TUNNEL, target: 'crm' },
      authType: 'bearer',
      credentials: { bearerToken: TOKEN },
    },
  });
  expect(system.status, system.text).toBe(201);
  const created = await api.call('POST', '/v1/tools', {
    body: { id: 'who', steps: [{ id: 'call', config: { url: '/who', systemId: 'crm' } }] },
  });
  expect(created.status, created.text).toBe(201);
}, 30_000);

afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.kill()));
  await owned?.stop();
  await intruding?.stop();
});

describe('a gateway tunnel id', () => {
  let ownerKey: string;
  let owner: AgentProcess;
  let intruder: AgentProcess;

  it('refuses an agent with another key; the owner stays connected and runs still reach its target', async () => {
    ownerKey = await hostKey('corp-eu agent');
    owner = await agentFor(ownerKey, owned);
    await owner.waitFor(`tunnel '${TUNNEL}' registered`);
    expect(await runWho()).toMatchObject({ status: 'success', data: { reached: 'owner' } });

    intruder = await agentFor(await hostKey('someone else'), intruding);
    await intruder.waitFor(`the server refused tunnel '${TUNNEL}': another API key owns this tunnel id`);
    expect(intruder.output()).not.toContain(`tunnel '${TUNNEL}' registered`);
    expect(owner.output()).not.toContain('took it over');
    expect(owner.child.exitCode).toBeNull();

    const after = await runWho();
    expect(after).toMatchObject({ status: 'success', data: { reached: 'owner' } });
    // The request, with the system's Authorization header, went to the owner's target only.
    expect(intruding.requests).toHaveLength(0);
    expect(owned.requests.at(-1)?.headers.authorization).toBe(`Bearer ${TOKEN}`);
  }, 60_000);

  it('lets the owner key take it over again (a replacement agent)', async () => {
    const replacement = await agentFor(ownerKey, owned);
    await replacement.waitFor(`tunnel '${TUNNEL}' registered`);
    await owner.waitFor('took it over; this agent stops');
    expect(await owner.exited).toBe(0);
    expect(await runWho()).toMatchObject({ status: 'success', data: { reached: 'owner' } });
    expect(intruding.requests).toHaveLength(0);
  }, 60_000);

  it('is released by an admin only; the retrying agent of another key then registers it', async () => {
    const released = `/v1/gateways/${TUNNEL}/owner`;
    const byAgentKey = await api.call<{ error: { code: string } }>('DELETE', released, { key: ownerKey });
    expect(byAgentKey.status).toBe(403);
    expect(byAgentKey.body.error.code).toBe('KG_ERR_SCOPE_REQUIRED');
    expect((await api.call('DELETE', released)).status).toBe(200);
    expect((await api.call('DELETE', released)).status).toBe(404);
    // The refused agent keeps retrying with backoff: it gets in now and takes the connection over.
    await intruder.waitFor(`tunnel '${TUNNEL}' registered`, 30_000);
    expect(await runWho()).toMatchObject({ status: 'success', data: { reached: 'intruder' } });
  }, 60_000);
});
