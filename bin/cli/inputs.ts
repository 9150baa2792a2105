/**
 * A run's inputs from the command line. `--inputs-file` holds a JSON object; each `--input key=value`
 * sets one top-level key over it. A value is JSON when it parses as JSON (`count=3` is a number,
 * `tags=["a","b"]` an array, `flag=true` a boolean), and text otherwise (`name=alice`); quote a value to
 * keep it text (`zip='"01234"'`, `id='"42"'`).
 */
import type { JsonObject, JsonValue } from '../../contract/json.ts';
import { type OptionSpec, UsageError } from './command.ts';
import { readDocument } from './files.ts';

/** The options `runInputs` reads, as every command that runs a tool takes them. */
export const INPUT_OPTIONS = {
  input: {
    type: 'string',
    multiple: true,
    value: '<key=value>',
    help: 'an input (repeatable); the value is JSON when it parses as JSON, else text',
  },
  'inputs-file': {
    type: 'string',
    value: '<path>',
    help: 'a file holding the inputs as a JSON object (--input keys win over its keys)',
  },
} as const satisfies Record<string, OptionSpec>;

/** The value of `--input key=value`: JSON when it parses, else the text itself. */
export function inputValue(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return text;
  }
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

async function readInputsFile(path: string): Promise<JsonObject> {
  const json = await readDocument(path, { option: '--inputs-file' });
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new UsageError(`--inputs-file ${path} must hold a JSON object, not ${kindOf(json)}`);
  }
  return json as JsonObject;
}

/** The inputs of `--inputs-file` and `--input`s (which win); a key given twice with --input is refused. */
export async function runInputs(pairs: readonly string[], file: string | undefined): Promise<JsonObject> {
  const given = new Map<string, JsonValue>();
  for (const pair of pairs) {
    const equals = pair.indexOf('=');
    if (equals <= 0) throw new UsageError(`--input '${pair}': give key=value`);
    const key = pair.slice(0, equals);
    if (given.has(key)) throw new UsageError(`--input '${key}' is given twice`);
    given.set(key, inputValue(pair.slice(equals + 1)));
  }
  const fromFile = file === undefined ? {} : await readInputsFile(file);
  // fromEntries defines keys (a key named __proto__ stays a key).
  return Object.fromEntries([...Object.entries(fromFile), ...given]);
}
