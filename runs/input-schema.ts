import { KG_ERR_INPUTS_INVALID } from '../contract/api/errors.ts';
import type { Tool } from '../contract/api/tool.ts';
import type { JsonObject, JsonValue } from '../contract/json.ts';
import { schemaIssues } from '../engine/json-schema.ts';

/** Keys the service itself adds to a run's inputs (webhook context), never part of what a caller sends. */
const SERVICE_INPUT_KEYS = ['__webhook__'];

/**
 * The payload part of an inputSchema in the form tools written for superglue's older clients use,
 * `{properties: {payload: {…}, credentials: {…}}}`; undefined for a schema of the inputs themselves.
 */
export function wrappedPayloadSchema(
  schema: Record<string, JsonValue>,
): Record<string, JsonValue> | undefined {
  const properties = schema.properties;
  if (!properties || typeof properties !== 'object' || Array.isArray(properties)) return undefined;
  const payload = properties.payload;
  const wrapped =
    'credentials' in properties && payload && typeof payload === 'object' && !Array.isArray(payload);
  return wrapped ? payload : undefined;
}

/**
 * The part of the inputSchema that describes the inputs: of a wrapped schema, the payload part when the
 * inputs have no `payload` key themselves (credentials travel separately and are never inputs).
 */
function effectiveSchema(schema: Record<string, JsonValue>, inputs: JsonObject): Record<string, JsonValue> {
  const payload = wrappedPayloadSchema(schema);
  return payload && !('payload' in inputs) ? payload : schema;
}

/**
 * Refuses a run whose inputs do not match the tool's inputSchema, before anything is stored: 400 listing
 * every violation by path. Every entrance (REST, webhooks, chains, …) starts runs through here.
 */
export function assertInputsMatchSchema(tool: Tool, inputs: JsonObject): void {
  if (!tool.inputSchema) return;
  const given = SERVICE_INPUT_KEYS.some((key) => key in inputs)
    ? Object.fromEntries(Object.entries(inputs).filter(([key]) => !SERVICE_INPUT_KEYS.includes(key)))
    : inputs;
  const violations = schemaIssues(effectiveSchema(tool.inputSchema, given), given, 'inputs');
  if (violations.length > 0) throw KG_ERR_INPUTS_INVALID(tool.id, violations);
}
