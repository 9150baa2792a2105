/**
 * MCP tool names for kubeglue tool ids. An MCP client hands each tool to a model as a function, and the
 * model APIs behind the usual clients accept only `^[A-Za-z0-9_-]{1,64}$` as a function name (stricter
 * than MCP's own rule, which also allows dots and 128 characters). A tool id that fits is the name as it
 * is; any other id (dots, spaces, other letters, longer than 64) gets a derived name: its letters, digits,
 * `_` and `-` (accents dropped, every other run of characters one `_`), cut to 55 characters, then `_` and
 * the first 8 hex digits of the id's SHA-256. The same id always gets the same name, on every replica.
 */
import { createHash } from 'node:crypto';

/** A name every client's model accepts. */
export const MCP_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_NAME = 64;
const HASH_DIGITS = 8;

/** The MCP name of the tool with this id (see the module's comment). */
export function mcpToolName(toolId: string): string {
  if (MCP_TOOL_NAME.test(toolId)) return toolId;
  const stem = toolId
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(/[^A-Za-z0-9_-]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, MAX_NAME - 1 - HASH_DIGITS);
  const hash = createHash('sha256').update(toolId, 'utf8').digest('hex').slice(0, HASH_DIGITS);
  return `${stem || 'tool'}_${hash}`;
}

/**
 * The tools by MCP name. A tool whose id is its name always keeps it; a derived name that is already taken
 * (another tool's id spells it, or two ids share a hash prefix) is left out, so a name never means two
 * tools. `tools` in a stable order (by id) keeps the choice the same on every call.
 */
export function toolsByName<T extends { id: string }>(tools: readonly T[]): Map<string, T> {
  const named = new Map<string, T>();
  const derived: T[] = [];
  for (const tool of tools) {
    if (MCP_TOOL_NAME.test(tool.id)) named.set(tool.id, tool);
    else derived.push(tool);
  }
  for (const tool of derived) {
    const name = mcpToolName(tool.id);
    if (!named.has(name)) named.set(name, tool);
  }
  return named;
}
