import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { useTestDatabase } from '../../support/database.ts';
import { callApi, TEST_ADMIN_KEY } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { type ApiProcess, grantKubeglueRoles, startApi } from '../../support/kube/kubeglue.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';

describeKube('the MCP endpoint of two kubeglue api replicas', () => {
  const bed = useKubeTestBed('mcp', { crds: true });
  const db = useTestDatabase();
  const target = useHttpTarget();
  const replicas: ApiProcess[] = [];
  const urls: string[] = [];
  const answeredBy: number[] = [];
  let client: Client;

  beforeAll(async () => {
    await grantKubeglueRoles(bed.kube, bed.namespace.name);
    target.route('GET', '/stock', { body: { sku: 'a-1', count: 7 } });
    for (let i = 0; i < 2; i++) {
      const replica = await startApi(bed, db.url, {
        KUBEGLUE_EGRESS_PRIVATE: 'allow',
        KUBEGLUE_LOG_LEVEL: 'warn',
      });
      replicas.push(replica);
      urls.push(replica.url);
    }
    await Promise.all(replicas.map((replica) => replica.waitForOutput(/ready on/, 60_000)));

    // Round robin: each request of the client goes to the next replica.
    let next = 0;
    const roundRobin: typeof fetch = (input, init) => {
      const replica = next++ % urls.length;
      answeredBy.push(replica);
      const url = new URL(input instanceof Request ? input.url : String(input));
      return fetch(`${urls[replica]}${url.pathname}${url.search}`, init);
    };
    client = new Client({ name: 'kubeglue-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${urls[0]}/mcp`), {
        fetch: roundRobin,
        requestInit: { headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } },
      }),
    );
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    await Promise.all(replicas.map((replica) => replica.stop()));
  });

  it('lists a tool added through either replica and runs it on whichever replica the call reaches', async () => {
    const created = await callApi(urls[1] as string, TEST_ADMIN_KEY, 'POST', '/v1/tools', {
      id: 'stock-level',
      instruction: 'Reads the stock of an article.',
      steps: [{ id: 'stock', config: { url: `${target.url}/stock` } }],
    });
    expect(created.status, created.text).toBe(201);
    // Each replica's tool cache follows the Tool resources: both lists show the tool in turn.
    await expect
      .poll(async () => (await client.listTools()).tools.map((tool) => tool.name), { timeout: 10_000 })
      .toContain('stock-level');
    await expect
      .poll(async () => (await client.listTools()).tools.map((tool) => tool.name), { timeout: 10_000 })
      .toContain('stock-level');

    const results: CallToolResult[] = [];
    for (let i = 0; i < 2; i++) {
      results.push((await client.callTool({ name: 'stock-level', arguments: {} })) as CallToolResult);
    }
    expect(new Set(answeredBy)).toEqual(new Set([0, 1]));
    for (const result of results) {
      expect(result.structuredContent).toEqual({ sku: 'a-1', count: 7 });
      const runId = result._meta?.['kubeglue.dev/runId'] as string;
      // Runs live in Postgres: each replica shows the other's.
      for (const url of urls) {
        const run = await callApi<Run>(url, TEST_ADMIN_KEY, 'GET', `/v1/runs/${runId}`);
        expect(run.body).toMatchObject({ toolId: 'stock-level', status: 'success', requestSource: 'mcp' });
      }
    }
  });
});
