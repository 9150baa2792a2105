/** Errors of tools: not found, exists, changed concurrently, invalid at save time, archived. */
import { type CatalogEntry, errorArea } from './define.ts';
import type { ErrorIssue } from './issues.ts';

const { define, defineRefusal, entries } = errorArea();

/** A problem of a tool, as the 422 message names it (`steps[1] (shape).config.transformCode`). */
export interface ToolProblem extends ErrorIssue {
  /** The path with the step's id beside its index, for people. */
  field: string;
  /** The step URL's scheme (`mssql:`) when no step can speak it: the save is KG_ERR_PROTOCOL_UNSUPPORTED. */
  unsupportedScheme?: string;
}

/** Also the answer for a tool the key may not use: "not yours" and "does not exist" look the same. */
export const KG_ERR_TOOL_NOT_FOUND = define(
  'KG_ERR_TOOL_NOT_FOUND',
  404,
  (toolId: string) => `Tool '${toolId}' not found`,
  'Check the id: GET /v1/tools lists the tools the key may see (archived ones with ?includeArchived=true). A key limited to tools gets this answer for every other tool.',
);
export const KG_ERR_TOOL_EXISTS = define(
  'KG_ERR_TOOL_EXISTS',
  409,
  (toolId: string) => `Tool '${toolId}' already exists`,
  'Choose another id, or change the tool with PUT /v1/tools/{id}.',
);
export const KG_ERR_TOOL_ID_MISMATCH = define(
  'KG_ERR_TOOL_ID_MISMATCH',
  400,
  (bodyId: string, pathId: string) => `The body's id '${bodyId}' differs from the path's '${pathId}'`,
  "Leave id out of the body or make it the path's id; a tool is not renamed (create it under the new id, then delete the old one).",
);
export const KG_ERR_TOOL_CHANGED_CONCURRENTLY = define(
  'KG_ERR_TOOL_CHANGED_CONCURRENTLY',
  409,
  (toolId: string) => `Tool '${toolId}' is being changed concurrently; retry`,
  'Another write changed the tool at the same moment: read it again and retry.',
);
/** `field: message; …` (docs/errors.md renders the templates with strings in place of the problems). */
const toolProblemList = (problems: readonly ToolProblem[]): string =>
  problems
    .map((problem) => (typeof problem === 'string' ? problem : `${problem.field}: ${problem.message}`))
    .join('; ');

/** Save-time validation: every problem, each naming its step and field. */
export const KG_ERR_TOOL_INVALID = defineRefusal(
  'KG_ERR_TOOL_INVALID',
  422,
  (problems: readonly ToolProblem[]) => `Invalid tool: ${toolProblemList(problems)}`,
  'Fix every problem listed (each names its step and field: a transform that does not compile, an invalid JSON Schema, an unknown system, a step URL without scheme or system, an expression in SQL text) and save again.',
);
/** Save-time validation found a step that speaks a protocol kubeglue does not (MSSQL, MongoDB, …). */
export const KG_ERR_PROTOCOL_UNSUPPORTED = defineRefusal(
  'KG_ERR_PROTOCOL_UNSUPPORTED',
  422,
  (problems: readonly ToolProblem[]) => `Unsupported protocol: ${toolProblemList(problems)}`,
  'A step URL (or the base URL of the system a relative step uses) has a scheme no step speaks: MSSQL and MongoDB systems can be stored but no step can use them yet (docs/tools.md#other-protocols lists the protocols). Use a supported protocol and save again. A connection test of such a system (POST /v1/systems/{id}/test) is refused the same way.',
);
export const KG_ERR_TOOL_ARCHIVED = define(
  'KG_ERR_TOOL_ARCHIVED',
  400,
  (toolId: string) => `Tool '${toolId}' is archived and cannot be run`,
  'Unarchive the tool first: PUT /v1/tools/{id} with {"archived": false}.',
);

/** A test added to a tool (a run saved as a test) would break the tool's test bounds (contract/api/tool-test.ts). */
export const KG_ERR_TOOL_TESTS_LIMIT = define(
  'KG_ERR_TOOL_TESTS_LIMIT',
  422,
  (toolId: string, over: 'count' | 'bytes', amount: number, max: number) =>
    over === 'count'
      ? `Tool '${toolId}' has ${amount} tests, the most a tool may carry (${max}); the test was not added`
      : `The tests of tool '${toolId}' would be ${amount} bytes of JSON together with this one, more than ${max}; the test was not added`,
  "Remove a test first (PUT /v1/tools/{id} with the tests to keep), or save the test under the name of one it replaces. A test's size is mostly its recorded exchanges: record a run with fewer pages or items.",
);

/** This area's codes in the order declared here (errors.ts puts the areas together into the catalog). */
export const TOOL_ERRORS: readonly CatalogEntry[] = entries;
