/**
 * JSON Schema checks (ajv; compiled schemas are cached): whether a tool's schema compiles, every way a run's
 * inputs break its inputSchema, whether a result matches its outputSchema.
 */
import type { ValidateFunction } from 'ajv';
import type { ErrorIssue } from '../contract/api/errors.ts';
import type { JsonValue } from '../contract/json.ts';
import { lazyRequire } from './lazy-require.ts';

const loadAjv = lazyRequire<typeof import('ajv')>('ajv');
let ajv: import('ajv').Ajv | undefined;
const compiled = new Map<string, ValidateFunction>();
const MAX_CACHED = 256;

function validatorFor(schema: Record<string, JsonValue>): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    ajv ??= new (loadAjv().Ajv)({ allErrors: true, strict: false });
    validate = ajv.compile(schema);
    if (compiled.size >= MAX_CACHED) compiled.delete(compiled.keys().next().value as string);
    compiled.set(key, validate);
  }
  return validate;
}

/** Checks that a JSON Schema compiles; the message says why not. */
export function checkJsonSchema(schema: Record<string, JsonValue>): string | undefined {
  try {
    validatorFor(schema);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * Every way `data` breaks the schema, each at its field from `root` (`['inputs', 'user', 'id']`: must be
 * integer); a missing required property is reported at the property itself (`inputs.userId: is required`).
 */
export function schemaIssues(schema: Record<string, JsonValue>, data: JsonValue, root: string): ErrorIssue[] {
  const validate = validatorFor(schema);
  if (validate(data)) return [];
  return (validate.errors ?? []).map((e) => {
    const path: Array<string | number> = [
      root,
      ...e.instancePath
        .split('/')
        .slice(1)
        .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
        .map((part) => (/^\d+$/.test(part) ? Number(part) : part)),
    ];
    if (e.keyword === 'required') {
      const missing = (e.params as { missingProperty?: unknown }).missingProperty;
      return { path: [...path, String(missing)], message: 'is required' };
    }
    const extra =
      e.keyword === 'additionalProperties'
        ? ` '${String((e.params as { additionalProperty?: unknown }).additionalProperty)}'`
        : e.keyword === 'enum'
          ? ` (${((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).map((v) => JSON.stringify(v)).join(', ')})`
          : '';
    return { path, message: `${e.message ?? 'is invalid'}${extra}` };
  });
}

/** Returns undefined when data matches, else a message listing the failing JSON pointers. */
export function validateOutput(schema: Record<string, JsonValue>, data: JsonValue): string | undefined {
  const validate = validatorFor(schema);
  if (validate(data)) return undefined;
  const problems = (validate.errors ?? []).map(
    (e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`,
  );
  return `Output does not match outputSchema: ${problems.join('; ')}`;
}
