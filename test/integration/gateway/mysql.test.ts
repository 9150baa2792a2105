/**
 * A MySQL step on a private system reaches the run's MariaDB only through a real gateway agent process:
 * the engine may not connect to private addresses (KUBEGLUE_EGRESS_PRIVATE=deny) and the system's host name
 * does not resolve; the agent dials the server on loopback. TLS runs end to end through the tunnel.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { type AgentProcess, startAgent } from '../../support/gateway-agent.ts';
import { mariadbSkip, useMariaDb } from '../../support/mariadb.ts';

const TUNNEL = 'corp-db';

describe.skipIf(mariadbSkip())('a MySQL system behind a gateway', () => {
  const api = useTestApi({ KUBEGLUE_EGRESS_PRIVATE: 'deny' });
  const database = useMariaDb();
  let agent: AgentProcess | undefined;

  async function run(toolId: string): Promise<Run> {
    return (await api.call<Run>('POST', `/v1/tools/${toolId}/run`, { body: {} })).body;
  }

  beforeAll(async () => {
    await database.admin.query(
      "CREATE TABLE notes (id INT PRIMARY KEY, text VARCHAR(50)); INSERT INTO notes VALUES (1, 'private')",
    );
    agent = await startAgent({
      tunnel_id: TUNNEL,
      server_url: api.url.replace('http://', 'ws://').replace('127.0.0.1', 'localhost'),
      api_key: TEST_ADMIN_KEY,
      // The test server is not on 3306, from which the agent would guess MySQL: the protocol is named.
      targets: { shop: { address: `127.0.0.1:${database.server.port}`, protocol: 'mysql' } },
    });
    await agent.waitFor(`tunnel '${TUNNEL}' registered`);
    const system = await api.call('POST', '/v1/systems', {
      body: {
        id: 'shop',
        url: `mysql://shop.corp.internal:3306/${database.name}`,
        authType: 'dataStore',
        credentials: { username: database.user, password: database.password, ca: database.server.ca },
        gateway: { tunnelId: TUNNEL, target: 'shop' },
      },
    });
    expect(system.status, system.text).toBe(201);
    for (const [id, url] of [
      ['notes', '/'],
      ['notes-plain', `mysql://shop.corp.internal:3306/${database.name}?ssl-mode=DISABLED`],
      ['notes-verify-ca', `mysql://shop.corp.internal:3306/${database.name}?ssl-mode=VERIFY_CA`],
      ['notes-verify-identity', `mysql://shop.corp.internal:3306/${database.name}?ssl-mode=VERIFY_IDENTITY`],
    ]) {
      const tool = await api.call('POST', '/v1/tools', {
        body: {
          id,
          steps: [
            {
              id: 'q',
              config: {
                url,
                systemId: 'shop',
                body: {
                  query:
                    "SELECT text, (SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_CIPHER') AS cipher FROM notes WHERE id = ?",
                  params: [1],
                },
              },
            },
          ],
        },
      });
      expect(tool.status, tool.text).toBe(201);
    }
  });

  afterAll(async () => {
    await agent?.kill();
  });

  it('runs the query through the tunnel with the system credentials, over TLS (a host off loopback prefers it)', async () => {
    const result = await run('notes');
    expect(result.status, result.error).toBe('success');
    const [row] = result.data as Array<{ text: string; cipher: string }>;
    expect(row?.text).toBe('private');
    // TLS runs between the step and the server: the agent relays bytes it cannot read.
    expect(row?.cipher).not.toBe('');
    expect(agent?.output()).not.toContain(database.password);
  });

  it('runs plain through the tunnel when the URL disables TLS', async () => {
    const result = await run('notes-plain');
    expect(result.status, result.error).toBe('success');
    expect(result.data).toEqual([{ text: 'private', cipher: '' }]);
  });

  it("checks the certificate against the system's host name, not the address the agent dials", async () => {
    // The test certificate is the ca credential's own, issued to localhost: its chain holds for shop.corp.internal,
    // its name does not.
    const chain = await run('notes-verify-ca');
    expect(chain.status, chain.error).toBe('success');
    const identity = await run('notes-verify-identity');
    expect(identity.status).toBe('failed');
    expect(identity.error).toContain('MySQL connection to shop.corp.internal:3306');
    expect(identity.error).toMatch(/does not match certificate's altnames|shop\.corp\.internal/);
  });

  it('lists the target as a MySQL one', async () => {
    const listed = await api.call<{ targets: Array<{ name: string; protocol: string }> }>(
      'GET',
      `/v1/gateways/${TUNNEL}`,
    );
    expect(listed.body.targets).toEqual([{ name: 'shop', protocol: 'mysql' }]);
  });
});
