/**
 * `tools/list` in pages bounded in bytes: one answer holds the tools (in the order of their MCP names)
 * whose JSON fits in the page, and `nextCursor` when more follow, so no listing grows with the number or
 * the size of the tools (issue 29). The cursor is the last name of the page, opaque to clients; the next
 * page starts after it, whatever tools came or went in between. A tool whose entry alone is larger than a
 * page is left out (and reported to `skipped`). Pure: no I/O.
 */
import type { ListToolsResult, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';

/** The cursor of the page after `name`. */
function cursorAfter(name: string): string {
  return Buffer.from(name, 'utf8').toString('base64url');
}

/** The name a cursor continues after, or undefined when the text is no cursor this server made. */
export function nameOfCursor(cursor: string): string | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  const name = Buffer.from(cursor, 'base64url').toString('utf8');
  return cursorAfter(name) === cursor ? name : undefined;
}

/**
 * The page of `tools` (by MCP name) after the name `after` (from the first without it), at most `maxBytes`
 * of tool JSON; `shape` makes a listed tool of an entry.
 */
export function listingPage<T>(
  tools: ReadonlyMap<string, T>,
  shape: (name: string, tool: T) => McpTool,
  options: { after?: string | undefined; maxBytes: number; skipped?: (name: string, bytes: number) => void },
): ListToolsResult {
  const names = [...tools.keys()].sort();
  const page: McpTool[] = [];
  let used = 0;
  for (const name of names) {
    if (options.after !== undefined && name <= options.after) continue;
    const listed = shape(name, tools.get(name) as T);
    const bytes = Buffer.byteLength(JSON.stringify(listed), 'utf8');
    if (bytes > options.maxBytes) {
      options.skipped?.(name, bytes);
      continue;
    }
    if (used + bytes > options.maxBytes) {
      const last = page.at(-1)?.name;
      // A page always holds one tool at least (each fits alone), so `last` is set.
      return last === undefined ? { tools: page } : { tools: page, nextCursor: cursorAfter(last) };
    }
    page.push(listed);
    used += bytes;
  }
  return { tools: page };
}
