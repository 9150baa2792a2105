/**
 * Issue 29, item 1: a 4.8 KB `POST /mcp` holding 100 `tools/list` requests, from a key limited to one tool
 * whose instruction was 2 MB, was answered with 210 MB. Now the instruction is refused when it is saved,
 * a JSON-RPC batch is refused whole with a JSON-RPC error, and a listing comes in pages of at most
 * KUBEGLUE_MCP_LIST_PAGE_BYTES, however many tools a key may see.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import { MAX_INSTRUCTION_LENGTH } from '../../../contract/api/tool.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';

const PAGE_BYTES = 64 * 1024;
const api = useTestApi({ KUBEGLUE_MCP_LIST_PAGE_BYTES: String(PAGE_BYTES) });
const clients: Client[] = [];

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
});

const steps = [{ id: 'noop', config: { type: 'transform', transformCode: '() => 1' } }];
const TWO_MB = 'Lists the orders. '.repeat(Math.ceil((2 * 1024 * 1024) / 18));

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'kubeglue-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${api.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  clients.push(client);
  return client;
}

async function restrictedKey(toolIds: string[]): Promise<string> {
  const created = await api.call<{ key: string }>('POST', '/v1/api-keys', {
    body: { name: 'mcp-one-tool', scopes: ['tools:read', 'tools:write', 'runs:execute'], toolIds },
  });
  expect(created.status, created.text).toBe(201);
  return created.body.key;
}

function expectInstructionRefused(answer: { status: number; body: unknown; text: string }, path: string) {
  expect(answer.status, answer.text.slice(0, 500)).toBe(400);
  const { error } = answer.body as ErrorBody;
  expect(error.code).toBe('KG_ERR_VALIDATION');
  expect(error.message).toContain(path);
  expect(error.message).toContain(String(MAX_INSTRUCTION_LENGTH));
  // The answer names the limit, it does not echo the text.
  expect(answer.text.length).toBeLessThan(2000);
}

describe('a tool whose instruction is 2 MB', () => {
  it('is refused when it is saved, by any key, on create and on update, for the tool and its steps', async () => {
    const key = await restrictedKey(['orders']);
    for (const caller of [key, TEST_ADMIN_KEY]) {
      const created = await api.call('POST', '/v1/tools', {
        key: caller,
        body: { id: 'orders', instruction: TWO_MB, steps },
      });
      expectInstructionRefused(created, 'instruction');
    }
    const stepped = await api.call('POST', '/v1/tools', {
      key,
      body: { id: 'orders', steps: [{ ...steps[0], instruction: TWO_MB }] },
    });
    expectInstructionRefused(stepped, 'steps[0].instruction');

    const longest = 'x'.repeat(MAX_INSTRUCTION_LENGTH);
    const saved = await api.call('POST', '/v1/tools', {
      key,
      body: { id: 'orders', instruction: longest, steps },
    });
    expect(saved.status, saved.text.slice(0, 500)).toBe(201);
    const updated = await api.call('PUT', '/v1/tools/orders', { key, body: { instruction: TWO_MB } });
    expectInstructionRefused(updated, 'instruction');
    const unsaved = await api.call('POST', '/v1/tools/run', {
      body: { tool: { id: 'orders-draft', instruction: TWO_MB, steps } },
    });
    expectInstructionRefused(unsaved, 'instruction');

    const listed = await (await connect(key)).listTools();
    expect(listed.tools.map((tool) => [tool.name, tool.description])).toEqual([['orders', longest]]);
  });
});

describe('a JSON-RPC batch', () => {
  it('of 100 tools/list requests from that key is refused whole, with a JSON-RPC error', async () => {
    const key = await restrictedKey(['orders']);
    const batch = JSON.stringify(
      Array.from({ length: 100 }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/list' })),
    );
    expect(batch.length).toBeLessThan(5000);
    const response = await fetch(`${api.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-03-26',
      },
      body: batch,
    });
    const text = await response.text();
    expect(response.status, text.slice(0, 500)).toBe(400);
    expect(text.length).toBeLessThan(1000);
    expect(JSON.parse(text)).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: -32600,
        message: expect.stringContaining('JSON-RPC batches are not accepted; send one message per POST'),
      },
    });
  });
});

describe('a listing of many tools', () => {
  it('comes in pages of at most KUBEGLUE_MCP_LIST_PAGE_BYTES, each tool once, following nextCursor', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `paged-${String(i).padStart(2, '0')}`);
    for (const id of ids) {
      const created = await api.call('POST', '/v1/tools', {
        body: { id, instruction: `${id} `.repeat(MAX_INSTRUCTION_LENGTH / 10), steps },
      });
      expect(created.status, created.text.slice(0, 300)).toBe(201);
    }
    const client = await connect(TEST_ADMIN_KEY);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      pages += 1;
      expect(Buffer.byteLength(JSON.stringify(page.tools))).toBeLessThanOrEqual(PAGE_BYTES);
      seen.push(...page.tools.map((tool) => tool.name));
      cursor = page.nextCursor;
    } while (cursor !== undefined && pages < 50);
    expect(pages).toBeGreaterThan(1);
    expect(seen).toEqual(['orders', ...ids].sort());

    await expect(client.listTools({ cursor: 'not a cursor' })).rejects.toThrow(/Invalid cursor/);
  });
});
