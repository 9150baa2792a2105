/**
 * Issue 21, part 3: `/mcp` speaks the Model Context Protocol (Streamable HTTP) with the same API keys. The
 * SDK's own Client and StreamableHTTPClientTransport against a started embedded server: listing, calling
 * against a real HTTP target, failures, key restrictions, the sync-run limit, progress, and a listing that
 * follows tools added and archived through REST.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { mcpToolName } from '../../../api/mcp/tool-names.ts';
import type { Run } from '../../../contract/api/run.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const SECRET = 'crm-secret-token-0123456789';

// One sync run at a time: the limit test holds the only slot.
const api = useTestApi({ KUBEGLUE_MAX_SYNC_RUNS: '1' });
const target = useHttpTarget();
const clients: Client[] = [];

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
});

async function connect(key: string | null = TEST_ADMIN_KEY): Promise<Client> {
  const client = new Client({ name: 'kubeglue-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), {
    requestInit: { headers: key === null ? {} : { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function createKey(body: Record<string, unknown>): Promise<string> {
  const created = await api.call<{ key: string }>('POST', '/v1/api-keys', { body });
  expect(created.status, created.text).toBe(201);
  return created.body.key;
}

async function putTool(body: Record<string, unknown>): Promise<void> {
  const created = await api.call('POST', '/v1/tools', { body });
  expect(created.status, created.text).toBe(201);
}

async function listed(client: Client): Promise<Map<string, McpTool>> {
  const { tools } = await client.listTools();
  return new Map(tools.map((tool) => [tool.name, tool]));
}

/** Calls tool `name` on a new session, asking for progress: the result and the progress messages in order. */
async function callWithProgress(name: string): Promise<{ result: CallToolResult; messages: string[] }> {
  const messages: string[] = [];
  const result = (await (
    await connect()
  ).callTool({ name, arguments: {} }, undefined, {
    onprogress: (progress) => messages.push(progress.message ?? ''),
  })) as CallToolResult;
  return { result, messages };
}

function text(result: CallToolResult): string {
  const first = result.content[0];
  return first?.type === 'text' ? first.text : '';
}

const runIdOf = (result: CallToolResult) => result._meta?.['kubeglue.dev/runId'] as string;

describe('the MCP endpoint', () => {
  it('lists each runnable tool with its name, description and input schema', async () => {
    target.route('GET', '/orders', (req) => ({
      body: { orders: [{ id: 1, status: new URL(req.url, 'http://t').searchParams.get('status') }] },
    }));
    const created = await api.call('POST', '/v1/systems', {
      body: { id: 'crm', url: target.url, credentials: { apiKey: SECRET } },
    });
    expect(created.status, created.text).toBe(201);
    await putTool({
      id: 'list-orders',
      name: 'List orders',
      instruction: 'Lists the orders with a status.',
      inputSchema: {
        type: 'object',
        properties: { status: { type: 'string', enum: ['open', 'closed'] } },
        required: ['status'],
      },
      steps: [
        {
          id: 'orders',
          config: { systemId: 'crm', url: '/orders', queryParams: { status: '<<status>>' } },
        },
      ],
    });
    await putTool({
      id: 'crm.sync orders',
      inputSchema: {
        type: 'object',
        properties: {
          payload: { type: 'object', properties: { since: { type: 'string' } } },
          credentials: { type: 'object' },
        },
      },
      steps: [{ id: 'noop', config: { type: 'transform', transformCode: '() => ({ synced: 0 })' } }],
    });
    await putTool({
      id: 'old-report',
      archived: true,
      steps: [{ id: 'noop', config: { type: 'transform', transformCode: '() => 1' } }],
    });

    const tools = await listed(await connect());
    expect(tools.get('list-orders')).toEqual({
      name: 'list-orders',
      title: 'List orders',
      description: 'Lists the orders with a status.',
      inputSchema: {
        type: 'object',
        properties: { status: { type: 'string', enum: ['open', 'closed'] } },
        required: ['status'],
      },
      _meta: { 'kubeglue.dev/toolId': 'list-orders' },
    });
    // An id no model API accepts as a function name gets a derived one; the wrapped schema its payload part.
    const synced = tools.get(mcpToolName('crm.sync orders'));
    expect(synced?.name).toMatch(/^crm_sync_orders_[0-9a-f]{8}$/);
    expect(synced).toMatchObject({
      description: "Runs the kubeglue tool 'crm.sync orders'.",
      inputSchema: { type: 'object', properties: { since: { type: 'string' } } },
      _meta: { 'kubeglue.dev/toolId': 'crm.sync orders' },
    });
    expect([...tools.keys()]).not.toContain('old-report');
  });

  it('runs a tool synchronously: the output as text and structured content, the run recorded as mcp', async () => {
    const client = await connect();
    const result = (await client.callTool({
      name: 'list-orders',
      arguments: { status: 'open' },
    })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ orders: [{ id: 1, status: 'open' }] });
    expect(JSON.parse(text(result))).toEqual({ orders: [{ id: 1, status: 'open' }] });
    const call = target.requests.find((request) => request.path === '/orders');
    expect(call?.query).toEqual([['status', 'open']]);

    const run = await api.call<Run>('GET', `/v1/runs/${runIdOf(result)}`);
    expect(run.body).toMatchObject({ toolId: 'list-orders', status: 'success', requestSource: 'mcp' });
    const bySource = await api.call<{ data: Run[] }>('GET', '/v1/runs?requestSources=mcp');
    expect(bySource.body.data.map((r) => r.runId)).toContain(runIdOf(result));
  });

  it('calls a tool whose id was renamed by the name it is listed under', async () => {
    const client = await connect();
    const result = (await client.callTool({
      name: mcpToolName('crm.sync orders'),
      arguments: { since: '2024-01-01' },
    })) as CallToolResult;
    expect(result.structuredContent).toEqual({ synced: 0 });
    const run = await api.call<Run>('GET', `/v1/runs/${runIdOf(result)}`);
    expect(run.body).toMatchObject({ toolId: 'crm.sync orders', requestSource: 'mcp' });
  });

  it('answers a failed run with a tool error naming the run and its error, never the credential', async () => {
    // The system's credential goes out in a header and comes back in the failure's body.
    target.route('GET', '/broken', (req) => ({
      status: 500,
      body: { error: `backend down for ${String(req.headers.authorization)}` },
    }));
    await putTool({
      id: 'broken',
      steps: [
        {
          id: 'call',
          config: {
            systemId: 'crm',
            url: '/broken',
            headers: { Authorization: 'Bearer <<crm_apiKey>>' },
          },
        },
      ],
    });
    await expect.poll(async () => (await listed(await connect())).has('broken')).toBe(true);
    const result = (await (await connect()).callTool({ name: 'broken', arguments: {} })) as CallToolResult;
    expect(result.isError).toBe(true);
    const runId = runIdOf(result);
    expect(text(result)).toContain(`Run ${runId} of tool 'broken' failed: `);
    expect(text(result)).toContain('HTTP 500');
    // The target did get the secret, and echoed it: the answer shows it as the template that named it.
    expect(target.requests.find((r) => r.path === '/broken')?.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(text(result)).toContain('backend down for Bearer <<crm_apiKey>>');
    expect(JSON.stringify(result)).not.toContain(SECRET);
    const run = await api.call<Run>('GET', `/v1/runs/${runId}`);
    expect(run.body).toMatchObject({ status: 'failed', requestSource: 'mcp' });
  });

  it('refuses arguments the input schema does not allow as a tool error, storing no run', async () => {
    const before = await api.call<{ total: number }>('GET', '/v1/runs?requestSources=mcp');
    const result = (await (
      await connect()
    ).callTool({
      name: 'list-orders',
      arguments: { status: 'pending' },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(text(result)).toContain("Inputs do not match the inputSchema of tool 'list-orders'");
    expect(text(result)).toContain('(KG_ERR_INPUTS_INVALID)');
    const after = await api.call<{ total: number }>('GET', '/v1/runs?requestSources=mcp');
    expect(after.body.total).toBe(before.body.total);
  });

  it('answers an unknown tool with a protocol error', async () => {
    await expect((await connect()).callTool({ name: 'no-such-tool', arguments: {} })).rejects.toThrow(
      /Unknown tool: no-such-tool/,
    );
  });

  it('reports the steps of a run as progress to a client that asks for it', async () => {
    await putTool({
      id: 'two-steps',
      steps: [
        { id: 'first', config: { type: 'transform', transformCode: '() => 1' } },
        { id: 'second', config: { type: 'transform', transformCode: '() => ({ sum: 2 })' } },
      ],
    });
    await expect.poll(async () => (await listed(await connect())).has('two-steps')).toBe(true);
    const { result, messages } = await callWithProgress('two-steps');
    expect(result.structuredContent).toEqual({ sum: 2 });
    expect(messages).toEqual([
      expect.stringMatching(/^Run \S+ of tool 'two-steps' started$/),
      "Step 'first' started",
      expect.stringMatching(/^Step 'first' succeeded/),
      "Step 'second' started",
      expect.stringMatching(/^Step 'second' succeeded/),
      expect.stringMatching(/^Run \S+ succeeded/),
    ]);
  });

  it('names the failed items of a loop that went on past them, in the progress and in the result', async () => {
    for (const id of [1, 3]) target.route('GET', `/parcels/${id}`, { body: { id, state: 'delivered' } });
    for (const id of [2, 4]) {
      target.route('GET', `/parcels/${id}`, { status: 404, body: { error: `parcel ${id} not found` } });
    }
    await putTool({
      id: 'track-parcels',
      steps: [
        {
          id: 'parcels',
          dataSelector: '() => [1, 2, 3, 4]',
          failureBehavior: 'continue',
          config: { url: `${target.url}/parcels/<<currentItem>>` },
        },
      ],
      outputTransform: '(s) => ({ delivered: s.parcels.filter((p) => p.success).length })',
    });
    await expect.poll(async () => (await listed(await connect())).has('track-parcels')).toBe(true);
    const notFound = (id: number) =>
      `HTTP 404 GET ${target.url}/parcels/${id}: {"error":"parcel ${id} not found"}`;
    const { result, messages } = await callWithProgress('track-parcels');
    expect(messages.map((message) => message.replace(/ in \d+ ms/, ' in N ms'))).toContain(
      `Step 'parcels' succeeded in N ms; 2 of 4 items failed: item 1: ${notFound(2)}; item 3: ${notFound(4)}`,
    );
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ delivered: 2 });
    expect(result.content).toEqual([
      { type: 'text', text: '{"delivered":2}' },
      {
        type: 'text',
        text: `Step 'parcels': 2 of 4 items failed (the step went on past them):\n- item 1: ${notFound(2)}\n- item 3: ${notFound(4)}`,
      },
    ]);
  });

  it('answers a call beyond the sync-run limit with a tool error the client can read', async () => {
    const held = target.hold('/slow');
    await putTool({ id: 'slow', steps: [{ id: 'wait', config: { url: `${target.url}/slow` } }] });
    await expect.poll(async () => (await listed(await connect())).has('slow')).toBe(true);
    const client = await connect();
    const slow = client.callTool({ name: 'slow', arguments: {} });
    await expect.poll(() => held.length).toBe(1);
    const refused = (await client.callTool({ name: 'two-steps', arguments: {} })) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain('(KG_ERR_RUN_LIMIT)');
    expect(refused.structuredContent).toMatchObject({ error: { code: 'KG_ERR_RUN_LIMIT' } });
    held[0]?.writeHead(200, { 'content-type': 'application/json' }).end('{"done":true}');
    expect(((await slow) as CallToolResult).structuredContent).toEqual({ done: true });
  });
});

describe('the transport', () => {
  it('is stateless: no session id, and GET (a server-to-client stream) answers 405 naming POST', async () => {
    const init = await api.call('POST', '/mcp', {
      headers: { accept: 'application/json, text/event-stream' },
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'curl', version: '1' },
        },
      },
    });
    expect(init.status).toBe(200);
    expect(init.headers.get('mcp-session-id')).toBeNull();
    expect(init.headers.get('x-trace-id')).toMatch(/^[0-9a-f]{32}$/);
    expect(init.text).toContain('"serverInfo":{"name":"kubeglue"');
    // Nothing could carry a list_changed notification to a stateless client.
    expect(init.text).toContain('"capabilities":{"tools":{"listChanged":false}}');
    const stream = await api.call<{ error: { code: string } }>('GET', '/mcp', {
      headers: { accept: 'text/event-stream' },
    });
    expect(stream.status).toBe(405);
    expect(stream.headers.get('allow')).toBe('POST');
    expect(stream.body.error.code).toBe('KG_ERR_METHOD_NOT_ALLOWED');
  });
});

describe('a client that goes away', () => {
  it('does not stop the run: it finishes and is recorded, and the server goes on', async () => {
    const held = target.hold('/left-behind');
    await putTool({
      id: 'left-behind',
      steps: [{ id: 'wait', config: { url: `${target.url}/left-behind` } }],
    });
    await expect.poll(async () => (await listed(await connect())).has('left-behind')).toBe(true);
    const gone = new AbortController();
    const call = fetch(`${api.url}/mcp`, {
      method: 'POST',
      signal: gone.signal,
      headers: {
        authorization: `Bearer ${TEST_ADMIN_KEY}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'left-behind', arguments: {} },
      }),
    }).then((response) => response.text());
    await expect.poll(() => held.length).toBe(1);
    gone.abort();
    await expect(call).rejects.toThrow();
    held[0]?.writeHead(200, { 'content-type': 'application/json' }).end('{"late":true}');
    await expect
      .poll(async () => {
        const runs = await api.call<{ data: Run[] }>('GET', '/v1/runs?toolId=left-behind');
        return runs.body.data.map((run) => [run.status, run.requestSource]);
      })
      .toEqual([['success', 'mcp']]);
    const after = (await (await connect()).callTool({ name: 'two-steps', arguments: {} })) as CallToolResult;
    expect(after.structuredContent).toEqual({ sum: 2 });
  });
});

describe('keys at the MCP endpoint', () => {
  it('refuses a request without a key or with a wrong one, as every route does', async () => {
    await expect(connect(null)).rejects.toMatchObject({ code: 401 });
    await expect(connect(null)).rejects.toThrow(/KG_ERR_MISSING_API_KEY/);
    await expect(connect('kg_not-a-key-of-this-server-0123456789abc')).rejects.toThrow(
      /KG_ERR_INVALID_API_KEY/,
    );
  });

  it('refuses a key that may not run tools, naming the scope', async () => {
    const reader = await createKey({ name: 'reader', scopes: ['tools:read', 'runs:read'] });
    await expect(connect(reader)).rejects.toMatchObject({ code: 403 });
    await expect(connect(reader)).rejects.toThrow(/runs:execute/);
  });

  it('lists and runs only the tools a key limited to tools may use', async () => {
    const limited = await createKey({ name: 'orders only', toolIds: ['list-orders'] });
    const client = await connect(limited);
    expect([...(await listed(client)).keys()]).toEqual(['list-orders']);
    const result = (await client.callTool({
      name: 'list-orders',
      arguments: { status: 'closed' },
    })) as CallToolResult;
    expect(result.structuredContent).toEqual({ orders: [{ id: 1, status: 'closed' }] });
    await expect(client.callTool({ name: 'two-steps', arguments: {} })).rejects.toThrow(
      /Unknown tool: two-steps/,
    );
  });

  it('lists only the tools whose systems a key limited to systems may use', async () => {
    const noCrm = await createKey({ name: 'no crm', systemIds: ['erp'] });
    const names = [...(await listed(await connect(noCrm))).keys()];
    expect(names).toContain('two-steps');
    expect(names).not.toContain('list-orders');
  });
});

describe('the tool list', () => {
  it('follows tools added and archived through REST', async () => {
    const client = await connect();
    expect((await listed(client)).has('fresh')).toBe(false);
    await putTool({
      id: 'fresh',
      instruction: 'Just added.',
      steps: [{ id: 'noop', config: { type: 'transform', transformCode: '() => 1' } }],
    });
    await expect.poll(async () => (await listed(client)).get('fresh')?.description).toBe('Just added.');
    const archived = await api.call('PUT', '/v1/tools/fresh', { body: { archived: true } });
    expect(archived.status, archived.text).toBe(200);
    await expect.poll(async () => (await listed(client)).has('fresh')).toBe(false);
    // Unarchived, it is back.
    await api.call('PUT', '/v1/tools/fresh', { body: { archived: false } });
    await expect.poll(async () => (await listed(client)).has('fresh')).toBe(true);
  });
});
