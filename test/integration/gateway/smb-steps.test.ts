/**
 * An SMB system in a private network, reached only through a real gateway agent process: the engine may
 * not connect to private addresses (KUBEGLUE_EGRESS_PRIVATE=deny), the system's host name does not
 * resolve, and the agent dials the real smbd on loopback (test/support/samba.ts).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { type AgentProcess, startAgent } from '../../support/gateway-agent.ts';
import { sambaMissing, startSamba, type TestSamba } from '../../support/samba.ts';

const TUNNEL = 'office';
const skip = sambaMissing();

describe.skipIf(skip)('an SMB system behind a gateway agent', () => {
  const api = useTestApi({ KUBEGLUE_EGRESS_PRIVATE: 'deny', KUBEGLUE_GATEWAY_CONNECT_WAIT_MS: '1000' });
  let samba: TestSamba;
  let agent: AgentProcess;

  async function run(toolId: string): Promise<Run> {
    return (await api.call<Run>('POST', `/v1/tools/${toolId}/run`, { body: {} })).body;
  }

  beforeAll(async () => {
    samba = await startSamba();
    await writeFile(join(samba.shares.files, 'inside.txt'), 'from the private share');
    agent = await startAgent({
      tunnel_id: TUNNEL,
      server_url: api.url.replace('http://', 'ws://').replace('127.0.0.1', 'localhost'),
      api_key: TEST_ADMIN_KEY,
      targets: { nas: { address: `127.0.0.1:${samba.port}`, protocol: 'smb' } },
    });
    await agent.waitFor(`tunnel '${TUNNEL}' registered`);
    const systems = [
      {
        id: 'nas',
        url: 'smb://nas.office.internal/files',
        gateway: { tunnelId: TUNNEL, target: 'nas' },
        credentials: { username: samba.username, password: samba.password, domain: samba.workgroup },
      },
      { id: 'nas-direct', url: `smb://127.0.0.1:${samba.port}/files`, credentials: { username: 'root' } },
    ];
    for (const system of systems) {
      const created = await api.call('POST', '/v1/systems', { body: system });
      expect(created.status, created.text).toBe(201);
    }
    const tools = [
      {
        id: 'nas-roundtrip',
        steps: [
          {
            id: 'files',
            modify: true,
            config: {
              url: '/',
              systemId: 'nas',
              body: [
                { operation: 'mkdir', path: 'outbox' },
                { operation: 'put', path: 'outbox/written.txt', content: 'through the tunnel' },
                { operation: 'get', path: 'inside.txt' },
                { operation: 'list', path: 'outbox' },
              ],
            },
          },
        ],
      },
      {
        id: 'nas-direct-list',
        steps: [{ id: 'files', config: { url: '/', systemId: 'nas-direct', body: { operation: 'list' } } }],
      },
    ];
    for (const tool of tools) {
      const created = await api.call('POST', '/v1/tools', { body: tool });
      expect(created.status, created.text).toBe(201);
    }
  }, 60_000);

  afterAll(async () => {
    await agent?.kill();
    await samba?.stop();
  });

  it('is advertised as an smb target', async () => {
    const one = await api.call<{ targets: Array<{ name: string; protocol: string }> }>(
      'GET',
      `/v1/gateways/${TUNNEL}`,
    );
    expect(one.body.targets).toEqual([{ name: 'nas', protocol: 'smb' }]);
  });

  it('runs SMB operations on the private share through the tunnel', async () => {
    const result = await run('nas-roundtrip');
    expect(result.status, result.error).toBe('success');
    const text = JSON.stringify(result.data);
    expect(text).toContain('from the private share');
    expect(text).toContain('written.txt');
    expect((await samba.authLog()).at(-1)).toMatch(/user \[KGTEST\]\\\[root\] .* with \[NTLMv2\]/);
  });

  it('is refused without the gateway: the engine may not reach the private address itself', async () => {
    const result = await run('nas-direct-list');
    expect(result.status).toBe('failed');
    expect(result.error).toContain('refused to connect to 127.0.0.1: a loopback address');
  });

  it('never prints the share password or file contents in the agent debug log', () => {
    const log = agent.output();
    expect(log).toContain('stream');
    expect(log).not.toContain(samba.password);
    expect(log).not.toContain('through the tunnel');
  });
});
