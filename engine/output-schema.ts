import type { ValidateFunction } from 'ajv';
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
 * Every way `data` breaks the schema, one line each, naming the field from `root` in dotted form
 * (`inputs.user.id: must be integer`, `inputs: must have required property 'userId'`).
 */
export function schemaViolations(schema: Record<string, JsonValue>, data: JsonValue, root: string): string[] {
  const validate = validatorFor(schema);
  if (validate(data)) return [];
  return (validate.errors ?? []).map((e) => {
    const path = e.instancePath
      .split('/')
      .slice(1)
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
      .join('');
    const extra =
      e.keyword === 'additionalProperties'
        ? ` '${String((e.params as { additionalProperty?: unknown }).additionalProperty)}'`
        : e.keyword === 'enum'
          ? ` (${((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).map((v) => JSON.stringify(v)).join(', ')})`
          : '';
    return `${root}${path}: ${e.message ?? 'is invalid'}${extra}`;
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
