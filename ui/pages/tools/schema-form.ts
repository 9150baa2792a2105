/**
 * A form made from a tool's inputSchema: the fields (strings, numbers, integers, booleans, choices from
 * an enum, lists, nested groups; JSON text for what a field cannot express), their drafts as the user types
 * them, and the inputs built from the drafts with the schema's rules checked first (required, types,
 * bounds, lengths, patterns, item counts), so a mistake is shown at its field before anything is sent. The
 * server checks the whole schema again (ajv); what only it knows comes back as `error.issues` by path.
 */
import type { JsonPath } from '../../components/json-search.ts';

/** A JSON Schema, read loosely: only what the form understands is used. */
export type Schema = { readonly [key: string]: unknown };

export type FieldKind =
  | 'string'
  | 'number'
  | 'integer'
  | 'boolean'
  | 'choice'
  | 'choices'
  | 'list'
  | 'group'
  | 'json';

export interface Field {
  kind: FieldKind;
  /** From the inputs' root: `['address', 'city']`, `['tags', 2]`. */
  path: JsonPath;
  label: string;
  description?: string | undefined;
  required: boolean;
  schema: Schema;
  /** choice, choices: the allowed values. */
  options?: readonly unknown[];
  /** group: its fields, in the schema's order. */
  fields?: readonly Field[];
  /** list: the schema of its items (each item's field is itemField(list, index)). */
  items?: Schema;
}

/** What the user has typed or picked, per field kind (see draftOf). */
export type Draft = string | boolean | undefined | Draft[] | { [name: string]: Draft };

export interface Problem {
  path: JsonPath;
  message: string;
}

/** Schemas nested deeper than this (a recursive $ref) are edited as JSON text. */
const MAX_DEPTH = 8;

const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `#/$defs/x` against the root schema; undefined when it leads nowhere. */
function resolveRef(root: Schema, ref: string): Schema | undefined {
  if (!ref.startsWith('#')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(1).split('/').filter(Boolean)) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    node = isSchema(node) ? node[part] : undefined;
  }
  return isSchema(node) ? node : undefined;
}

/** The schema a field edits: references followed, `anyOf: [X, {type: null}]` read as X. */
function effective(root: Schema, schema: Schema, depth = 0): Schema {
  if (depth > MAX_DEPTH) return schema;
  if (typeof schema.$ref === 'string') {
    const target = resolveRef(root, schema.$ref);
    const { $ref: _ref, ...rest } = schema;
    return target ? effective(root, { ...target, ...rest }, depth + 1) : schema;
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const variants = schema[key];
    if (Array.isArray(variants)) {
      const real = variants.filter((variant) => !(isSchema(variant) && variant.type === 'null'));
      const only = real[0];
      if (real.length === 1 && isSchema(only)) {
        const { [key]: _variants, ...rest } = schema;
        return effective(root, { ...rest, ...only }, depth + 1);
      }
    }
  }
  return schema;
}

/** The one JSON type of a schema (nullable types read as their other type), if it has one. */
function typeOf(schema: Schema): string | undefined {
  const type = schema.type;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) {
    const real = type.filter((item) => item !== 'null');
    return real.length === 1 && typeof real[0] === 'string' ? real[0] : undefined;
  }
  if (isSchema(schema.properties)) return 'object';
  if (isSchema(schema.items)) return 'array';
  return undefined;
}

function kindOf(schema: Schema, depth: number): FieldKind {
  if (Array.isArray(schema.enum)) return 'choice';
  if ('const' in schema) return 'choice';
  if (schema.allOf !== undefined || schema.anyOf !== undefined || schema.oneOf !== undefined) return 'json';
  switch (typeOf(schema)) {
    case 'string':
      return 'string';
    case 'number':
      return 'number';
    case 'integer':
      return 'integer';
    case 'boolean':
      return 'boolean';
    case 'array': {
      const items = schema.items;
      if (!isSchema(items) || depth >= MAX_DEPTH) return 'json';
      return Array.isArray(items.enum) ? 'choices' : 'list';
    }
    case 'object':
      return isSchema(schema.properties) && depth < MAX_DEPTH ? 'group' : 'json';
    default:
      return 'json';
  }
}

/** The field of a schema at a path: its kind, label and, for groups, its fields. */
export function fieldOf(
  root: Schema,
  raw: Schema,
  path: JsonPath,
  options: { label: string; required: boolean },
): Field {
  const schema = effective(root, raw);
  const kind = kindOf(schema, path.length);
  const field: Field = {
    kind,
    path,
    label: typeof schema.title === 'string' ? schema.title : options.label,
    description: typeof schema.description === 'string' ? schema.description : undefined,
    required: options.required,
    schema,
  };
  if (kind === 'choice') {
    field.options = Array.isArray(schema.enum) ? schema.enum : [schema.const];
  } else if (kind === 'choices') {
    const items = effective(root, schema.items as Schema);
    field.options = Array.isArray(items.enum) ? items.enum : [];
  } else if (kind === 'list') {
    field.items = schema.items as Schema;
  } else if (kind === 'group') {
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    field.fields = Object.entries(schema.properties as Record<string, unknown>)
      .filter((entry): entry is [string, Schema] => isSchema(entry[1]))
      .map(([name, property]) =>
        fieldOf(root, property, [...path, name], { label: name, required: required.has(name) }),
      );
  }
  return field;
}

/** The field of a list's item at an index. */
export function itemField(root: Schema, list: Field, index: number): Field {
  return fieldOf(root, list.items ?? {}, [...list.path, index], {
    label: `${list.label} item ${index + 1}`,
    required: true,
  });
}

/**
 * The form of a tool's inputs: a group of the inputSchema's properties, or one JSON field when the tool
 * declares no object schema (its inputs are then whatever JSON the user writes).
 */
export function inputsForm(schema: Schema | undefined): Field {
  if (schema && kindOf(effective(schema, schema), 0) === 'group') {
    return fieldOf(schema, schema, [], { label: 'Inputs', required: true });
  }
  return {
    kind: 'json',
    path: [],
    label: 'Inputs (JSON)',
    description: schema
      ? 'The inputSchema is not an object with properties: write the inputs as JSON.'
      : 'The tool declares no inputSchema: write its inputs as a JSON object, or leave it empty.',
    required: false,
    schema: schema ?? { type: 'object' },
  };
}

/** The draft showing a JSON value in a field (a default, earlier inputs); empty when there is none. */
export function draftOf(root: Schema, field: Field, value: unknown): Draft {
  switch (field.kind) {
    case 'string':
      if (typeof value !== 'string') return '';
      return field.schema.format === 'date-time' ? isoToLocal(value) : value;
    case 'number':
    case 'integer':
      return typeof value === 'number' ? String(value) : '';
    case 'boolean':
      return typeof value === 'boolean' ? value : field.required ? false : undefined;
    case 'choice': {
      const index = (field.options ?? []).findIndex((option) => sameJson(option, value));
      return index >= 0 ? String(index) : '';
    }
    case 'choices': {
      const chosen = Array.isArray(value) ? value : [];
      return (field.options ?? []).flatMap((option, index) =>
        chosen.some((item) => sameJson(item, option)) ? [String(index)] : [],
      );
    }
    case 'list':
      return Array.isArray(value)
        ? value.map((item, index) => draftOf(root, itemField(root, field, index), item))
        : [];
    case 'group': {
      const object = isSchema(value) ? value : {};
      return Object.fromEntries(
        (field.fields ?? []).map((child) => {
          const name = String(child.path[child.path.length - 1]);
          return [name, draftOf(root, child, name in object ? object[name] : child.schema.default)];
        }),
      );
    }
    case 'json':
      return value === undefined ? '' : JSON.stringify(value, null, 2);
  }
}

/** The first drafts of a form: each field's default. */
export function initialDraft(root: Schema, field: Field): Draft {
  return draftOf(root, field, field.schema.default);
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A date-time as a datetime-local value in the browser's zone (the form shows local time). */
function isoToLocal(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

/** The schema's bounds and lengths, as ajv words them (the server's messages read the same). */
function checkNumber(schema: Schema, value: number): string | undefined {
  const { minimum, maximum, exclusiveMinimum, exclusiveMaximum } = schema;
  if (typeof minimum === 'number' && value < minimum) return `must be >= ${minimum}`;
  if (typeof maximum === 'number' && value > maximum) return `must be <= ${maximum}`;
  if (typeof exclusiveMinimum === 'number' && value <= exclusiveMinimum)
    return `must be > ${exclusiveMinimum}`;
  if (typeof exclusiveMaximum === 'number' && value >= exclusiveMaximum)
    return `must be < ${exclusiveMaximum}`;
  return undefined;
}

function checkString(schema: Schema, value: string): string | undefined {
  const { minLength, maxLength, pattern } = schema;
  const length = [...value].length;
  if (typeof minLength === 'number' && length < minLength)
    return `must NOT have fewer than ${plural(minLength, 'character')}`;
  if (typeof maxLength === 'number' && length > maxLength)
    return `must NOT have more than ${plural(maxLength, 'character')}`;
  if (typeof pattern === 'string') {
    try {
      if (!new RegExp(pattern, 'u').test(value)) return `must match pattern "${pattern}"`;
    } catch {
      // A pattern this browser cannot read is left to the server.
    }
  }
  return undefined;
}

function checkCount(schema: Schema, count: number): string | undefined {
  const { minItems, maxItems } = schema;
  if (typeof minItems === 'number' && count < minItems)
    return `must NOT have fewer than ${plural(minItems, 'item')}`;
  if (typeof maxItems === 'number' && count > maxItems)
    return `must NOT have more than ${plural(maxItems, 'item')}`;
  return undefined;
}

/**
 * The JSON value of a field's draft (undefined: leave it out), every problem pushed at its field's path.
 * A required field left empty is "is required"; an optional group left wholly empty is left out.
 */
export function buildValue(root: Schema, field: Field, draft: Draft, problems: Problem[]): unknown {
  const fail = (message: string) => {
    problems.push({ path: field.path, message });
    return undefined;
  };
  const missing = () => (field.required ? fail('is required') : undefined);
  switch (field.kind) {
    case 'string': {
      if (typeof draft !== 'string' || draft === '') return missing();
      const value = field.schema.format === 'date-time' ? new Date(draft).toISOString() : draft;
      const problem = checkString(field.schema, value);
      return problem ? fail(problem) : value;
    }
    case 'number':
    case 'integer': {
      if (typeof draft !== 'string' || draft.trim() === '') return missing();
      const value = Number(draft);
      if (!Number.isFinite(value)) return fail('must be a number');
      if (field.kind === 'integer' && !Number.isInteger(value)) return fail('must be an integer');
      const problem = checkNumber(field.schema, value);
      return problem ? fail(problem) : value;
    }
    case 'boolean':
      return typeof draft === 'boolean' ? draft : missing();
    case 'choice': {
      if (typeof draft !== 'string' || draft === '') return missing();
      return field.options?.[Number(draft)];
    }
    case 'choices': {
      const chosen = Array.isArray(draft) ? draft : [];
      if (chosen.length === 0 && !field.required) return undefined;
      const problem = checkCount(field.schema, chosen.length);
      return problem ? fail(problem) : chosen.map((index) => field.options?.[Number(index)]);
    }
    case 'list': {
      const drafts = Array.isArray(draft) ? draft : [];
      if (drafts.length === 0 && !field.required) return undefined;
      const problem = checkCount(field.schema, drafts.length);
      if (problem) fail(problem);
      return drafts.map((item, index) => buildValue(root, itemField(root, field, index), item, problems));
    }
    case 'group': {
      const drafts = isSchema(draft) ? (draft as Record<string, Draft>) : {};
      const own: Problem[] = [];
      const entries: [string, unknown][] = [];
      for (const child of field.fields ?? []) {
        const name = String(child.path[child.path.length - 1]);
        const value = buildValue(root, child, drafts[name], own);
        if (value !== undefined) entries.push([name, value]);
      }
      // An optional group nobody touched is left out, with no complaint about its required fields.
      if (!field.required && entries.length === 0) return undefined;
      problems.push(...own);
      return Object.fromEntries(entries);
    }
    case 'json': {
      if (typeof draft !== 'string' || draft.trim() === '') return missing();
      try {
        return JSON.parse(draft) as unknown;
      } catch {
        return fail('is not valid JSON');
      }
    }
  }
}

/** The key of a path in a map of problems. */
export function pathKey(path: Readonly<JsonPath>): string {
  return JSON.stringify(path);
}

/** The count of a schema's things, for a list's legend: "2 of at most 5". */
export function countHint(schema: Schema, count: number): string {
  const { minItems, maxItems } = schema;
  const bounds = [
    typeof minItems === 'number' ? `at least ${minItems}` : '',
    typeof maxItems === 'number' ? `at most ${maxItems}` : '',
  ].filter(Boolean);
  return bounds.length > 0 ? `${plural(count, 'item')} (${bounds.join(', ')})` : plural(count, 'item');
}

/**
 * A tool's inputSchema in the form superglue's older tools use, `{properties: {payload, credentials}}`:
 * the payload's schema is the inputs' (the server reads it so), the credentials' property names are the
 * runtime credentials the tool expects.
 */
export function splitWrappedSchema(schema: Schema | undefined): {
  inputs: Schema | undefined;
  credentialNames: string[];
} {
  const properties = schema?.properties;
  if (!schema || !isSchema(properties) || !('credentials' in properties) || !isSchema(properties.payload)) {
    return { inputs: schema, credentialNames: [] };
  }
  const credentials = properties.credentials;
  const names =
    isSchema(credentials) && isSchema(credentials.properties) ? Object.keys(credentials.properties) : [];
  // $refs in the payload still resolve against the whole schema's definitions.
  const definitions = Object.fromEntries(
    ['$defs', 'definitions'].flatMap((key) => (key in schema ? [[key, schema[key]]] : [])),
  );
  return { inputs: { ...properties.payload, ...definitions }, credentialNames: names };
}
