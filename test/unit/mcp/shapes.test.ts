/**
 * Issue 21, part 3: how kubeglue's tools look to an MCP client: names every model API accepts, derived the
 * same way every time; input schemas MCP accepts (an object schema); results and refusals.
 */
import { describe, expect, it } from 'vitest';
import { mcpInputSchema, refusedResult, runResult } from '../../../api/mcp/shapes.ts';
import { MCP_TOOL_NAME, mcpToolName, toolsByName } from '../../../api/mcp/tool-names.ts';
import { KG_ERR_RUN_LIMIT } from '../../../contract/api/errors.ts';

describe('MCP tool names', () => {
  it('are the tool id when it fits a function name', () => {
    for (const id of ['orders', 'List_Orders-2', 'a'.repeat(64)]) expect(mcpToolName(id)).toBe(id);
  });

  it('are derived from ids that do not fit: readable, within the rule, the same every time', () => {
    const cases: Array<[string, RegExp]> = [
      ['crm.sync orders', /^crm_sync_orders_[0-9a-f]{8}$/],
      ['Café déjà vu', /^Cafe_deja_vu_[0-9a-f]{8}$/],
      ['日本語', /^tool_[0-9a-f]{8}$/],
      ['a'.repeat(65), /^a{55}_[0-9a-f]{8}$/],
      ['.hidden.', /^hidden_[0-9a-f]{8}$/],
    ];
    for (const [id, expected] of cases) {
      expect(mcpToolName(id)).toMatch(expected);
      expect(mcpToolName(id)).toMatch(MCP_TOOL_NAME);
      expect(mcpToolName(id)).toBe(mcpToolName(id));
    }
    // Ids that differ only in what was replaced get different names.
    expect(mcpToolName('crm.sync')).not.toBe(mcpToolName('crm sync'));
  });

  it('never name two tools: an id spelling a derived name keeps it, the derived one is not listed', () => {
    const derived = mcpToolName('crm.sync');
    const named = toolsByName([{ id: 'crm.sync' }, { id: derived }, { id: 'other' }]);
    expect([...named].map(([name, tool]) => [name, tool.id])).toEqual([
      [derived, derived],
      ['other', 'other'],
    ]);
  });
});

describe('MCP input schemas', () => {
  it('are the inputSchema, or its payload part in the wrapped form', () => {
    const inputs = { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] };
    expect(mcpInputSchema(inputs)).toEqual(inputs);
    expect(mcpInputSchema({ type: 'object', properties: { payload: inputs, credentials: {} } })).toEqual(
      inputs,
    );
  });

  it('are an object schema: open without an inputSchema, typed when the schema says no type', () => {
    expect(mcpInputSchema(undefined)).toEqual({ type: 'object', properties: {} });
    expect(mcpInputSchema({ properties: { a: { type: 'string' } } })).toEqual({
      type: 'object',
      properties: { a: { type: 'string' } },
    });
    expect(mcpInputSchema({ type: 'array' })).toEqual({ type: 'object', properties: {} });
  });
});

describe('MCP call results', () => {
  const metadata = { startedAt: '2024-01-01T00:00:00.000Z' };

  it('carry the output as text, as structured content when it is an object, and the run id', () => {
    expect(runResult({ runId: 'r1', toolId: 't', status: 'success', data: { n: 1 }, metadata })).toEqual({
      content: [{ type: 'text', text: '{"n":1}' }],
      structuredContent: { n: 1 },
      _meta: { 'kubeglue.dev/runId': 'r1' },
    });
    expect(runResult({ runId: 'r2', toolId: 't', status: 'success', data: [1, 2], metadata })).toEqual({
      content: [{ type: 'text', text: '[1,2]' }],
      _meta: { 'kubeglue.dev/runId': 'r2' },
    });
  });

  it('are tool errors for failed and aborted runs, naming the run and its error', () => {
    const failed = runResult({ runId: 'r3', toolId: 't', status: 'failed', error: 'HTTP 500', metadata });
    expect(failed).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: "Run r3 of tool 't' failed: HTTP 500" }],
      _meta: { 'kubeglue.dev/runId': 'r3' },
    });
    const aborted = runResult({ runId: 'r4', toolId: 't', status: 'aborted', metadata });
    expect(aborted.content).toEqual([
      { type: 'text', text: "Run r4 of tool 't' was aborted: no error was recorded" },
    ]);
  });

  it('are tool errors with the catalog code for refused calls', () => {
    const refused = refusedResult(KG_ERR_RUN_LIMIT(4));
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toEqual({
      error: { code: 'KG_ERR_RUN_LIMIT', message: expect.any(String), hint: KG_ERR_RUN_LIMIT(4).hint },
    });
    expect(refused.content).toEqual([{ type: 'text', text: expect.stringMatching(/\(KG_ERR_RUN_LIMIT\)$/) }]);
  });
});
