/** Errors of a tool's persistent state. */
import { type CatalogEntry, errorArea } from './define.ts';

const { define, entries } = errorArea();

export const KG_ERR_TOOL_STATE_LIMIT = define(
  'KG_ERR_TOOL_STATE_LIMIT',
  422,
  (toolId: string, problem: string) => `The state of tool '${toolId}' was not saved: ${problem}`,
  'Keep fewer keys or smaller values (bounded lists, a cursor rather than every id seen), or raise the setting the message names (docs/state.md).',
);
export const KG_ERR_TOOL_STATE_CREDENTIAL = define(
  'KG_ERR_TOOL_STATE_CREDENTIAL',
  422,
  (toolId: string, keys: string) =>
    `The state of tool '${toolId}' was not saved: ${keys} hold a credential value of the tool's systems`,
  'Keep credentials out of state: it is stored unencrypted and shown to every key that may read the tool. The system sends its credentials itself.',
);

/** This area's codes in the order declared here (errors.ts puts the areas together into the catalog). */
export const TOOL_STATE_ERRORS: readonly CatalogEntry[] = entries;
