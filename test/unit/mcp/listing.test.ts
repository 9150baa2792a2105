/**
 * MCP `tools/list` pages (api/mcp/listing.ts): bounded in bytes, in name order, continued by an opaque
 * cursor, with a tool too large for any page left out and reported.
 */
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { listingPage, nameOfCursor } from '../../../api/mcp/listing.ts';

const shape = (name: string, description: string): McpTool => ({
  name,
  description,
  inputSchema: { type: 'object' },
});
const size = (name: string, description: string) =>
  Buffer.byteLength(JSON.stringify(shape(name, description)));

function tools(entries: Array<[string, string]>): Map<string, string> {
  return new Map(entries);
}

describe('MCP listing pages', () => {
  it('fills a page up to the byte bound, then continues after its last name', () => {
    const all = tools([
      ['c', 'x'.repeat(100)],
      ['a', 'x'.repeat(100)],
      ['b', 'x'.repeat(100)],
    ]);
    const maxBytes = size('a', 'x'.repeat(100)) * 2;
    const first = listingPage(all, shape, { maxBytes });
    expect(first.tools.map((tool) => tool.name)).toEqual(['a', 'b']);
    const after = nameOfCursor(first.nextCursor as string);
    expect(after).toBe('b');
    // A tool added before the cursor, or the page's tools removed, does not shift the next page.
    all.set('aa', 'x'.repeat(100));
    all.delete('a');
    const second = listingPage(all, shape, { after, maxBytes });
    expect(second).toEqual({ tools: [shape('c', 'x'.repeat(100))] });
  });

  it('leaves out a tool larger than a page alone, and says which', () => {
    const skipped: string[] = [];
    const page = listingPage(
      tools([
        ['huge', 'x'.repeat(5000)],
        ['small', 'ok'],
      ]),
      shape,
      { maxBytes: 1000, skipped: (name) => skipped.push(name) },
    );
    expect(page).toEqual({ tools: [shape('small', 'ok')] });
    expect(skipped).toEqual(['huge']);
  });

  it('knows only the cursors it made', () => {
    const page = listingPage(
      tools([
        ['a', ''],
        ['b', ''],
      ]),
      shape,
      { maxBytes: size('a', '') },
    );
    expect(nameOfCursor(page.nextCursor as string)).toBe('a');
    for (const made of ['not a cursor', '', '%%', 'YQ==']) expect(nameOfCursor(made)).toBeUndefined();
  });
});
