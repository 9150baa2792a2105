/**
 * The logic behind the dashboard's Tools pages, without a browser: finding a field's line in a JSON text
 * (and a line of code inside a JSON string), and the run form made of an inputSchema (fields, defaults,
 * the schema's rules checked before sending). The browser tests (test/integration/ui/tools.test.ts) use
 * both through the pages.
 */
import { describe, expect, it } from 'vitest';
import {
  locateValue,
  offsetInString,
  parseErrorOffset,
  positionAt,
} from '../../../ui/components/json-locate.ts';
import {
  buildValue,
  type Draft,
  draftOf,
  type Field,
  initialDraft,
  inputsForm,
  type Problem,
  type Schema,
  splitWrappedSchema,
} from '../../../ui/pages/tools/schema-form.ts';

const TOOL = {
  id: 'shaper',
  steps: [
    { id: 'fetch', config: { url: 'https://x.test', headers: { 'X Key': 'v' } } },
    { id: 'shape', config: { type: 'transform', transformCode: '(s) => {\n  return s +;\n}' } },
  ],
  'odd "key"': [1, [2, 3]],
};
const TEXT = JSON.stringify(TOOL, null, 2);
const lineOf = (needle: string) => TEXT.split('\n').findIndex((row) => row.includes(needle)) + 1;

describe('locating a path in a JSON text', () => {
  it("finds a member's line, through objects and arrays, keys with any characters", () => {
    const at = (path: (string | number)[]) => {
      const found = locateValue(TEXT, path);
      return found && { line: positionAt(TEXT, found.offset).line, depth: found.depth };
    };
    expect(at(['steps', 1, 'config', 'transformCode'])).toEqual({
      line: lineOf('"transformCode"'),
      depth: 4,
    });
    expect(at(['steps', 0, 'config', 'headers', 'X Key'])).toEqual({ line: lineOf('"X Key"'), depth: 5 });
    expect(at(['odd "key"', 1, 0])).toEqual({ line: lineOf('2,'), depth: 3 });
    expect(at([])).toEqual({ line: 1, depth: 0 });
  });

  it('falls back to the nearest part of the path that exists', () => {
    const found = locateValue(TEXT, ['steps', 1, 'config', 'missing']);
    expect(found?.depth).toBe(3);
    // The "config" of the second step, the line above its "type".
    expect(positionAt(TEXT, found?.offset ?? -1).line).toBe(lineOf('"type": "transform"') - 1);
    expect(locateValue(TEXT, ['steps', 7])?.depth).toBe(1);
  });

  it('is undefined for text that is not JSON on the way', () => {
    expect(locateValue('{"a" [1, 2]}', ['a', 1])).toBeUndefined();
    expect(locateValue('{"a": "unterminated', ['b'])).toBeUndefined();
  });

  it('places a line and column of code kept in a JSON string, escapes counted as what they stand for', () => {
    const found = locateValue(TEXT, ['steps', 1, 'config', 'transformCode']);
    const quote = found?.valueOffset ?? -1;
    expect(TEXT[quote]).toBe('"');
    // Line 2, column 13 of the code is the ';' after "return s +".
    const offset = offsetInString(TEXT, quote, 2, 13);
    expect(TEXT[offset]).toBe(';');
    expect(TEXT.slice(offset - 14, offset)).toBe('\\n  return s +');
  });

  it("reads where JSON.parse stopped from Chromium's and Firefox's messages", () => {
    const text = '{\n  "a": 1\n  "b": 2\n}';
    expect(
      parseErrorOffset(
        text,
        new SyntaxError("Expected ',' or '}' after property value in JSON at position 13 (line 3 column 3)"),
      ),
    ).toBe(13);
    expect(parseErrorOffset(text, new SyntaxError('Unexpected string in JSON at position 13'))).toBe(13);
    expect(
      parseErrorOffset(
        text,
        new SyntaxError(
          "JSON.parse: expected ',' or '}' after property value in object at line 3 column 3 of the JSON data",
        ),
      ),
    ).toBe(13);
    expect(parseErrorOffset(text, new SyntaxError('Unexpected end of JSON input'))).toBe(text.length);
  });
});

const SCHEMA: Schema = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Name', minLength: 2 },
    count: { type: 'integer', minimum: 1, maximum: 5, default: 2 },
    ratio: { type: ['number', 'null'], exclusiveMinimum: 0 },
    loud: { type: 'boolean' },
    lang: { enum: ['en', 'de', 3], default: 'de' },
    days: { type: 'array', items: { enum: ['mon', 'tue', 'wed'] }, maxItems: 2 },
    tags: { type: 'array', items: { type: 'string', pattern: '^[a-z]+$' }, minItems: 1 },
    address: { $ref: '#/$defs/address' },
    extra: { type: 'object', additionalProperties: true },
  },
  required: ['name', 'count', 'tags'],
  $defs: {
    address: {
      type: 'object',
      properties: { city: { type: 'string' }, zip: { type: 'string' } },
      required: ['city'],
    },
  },
};

function build(schema: Schema, draft: Draft): { value: unknown; problems: Problem[] } {
  const problems: Problem[] = [];
  const value = buildValue(schema, inputsForm(schema), draft, problems);
  return { value, problems };
}

describe('the run form made of an inputSchema', () => {
  const form = inputsForm(SCHEMA);
  const kinds = Object.fromEntries((form.fields ?? []).map((field) => [field.path.join('.'), field.kind]));

  it('makes a field of each kind the schema describes, references and nullable types followed', () => {
    expect(kinds).toEqual({
      name: 'string',
      count: 'integer',
      ratio: 'number',
      loud: 'boolean',
      lang: 'choice',
      days: 'choices',
      tags: 'list',
      address: 'group',
      extra: 'json',
    });
    const address = form.fields?.find((field) => field.path[0] === 'address') as Field;
    expect(address.fields?.map((field) => [field.path, field.required])).toEqual([
      [['address', 'city'], true],
      [['address', 'zip'], false],
    ]);
    expect(form.fields?.[0]?.label).toBe('Name');
  });

  it('starts from the defaults and builds the inputs from what was entered', () => {
    const draft = initialDraft(SCHEMA, form) as Record<string, Draft>;
    expect(draft.count).toBe('2');
    expect(draft.lang).toBe('1');
    const filled = {
      ...draft,
      name: 'Ada',
      ratio: '0.5',
      loud: true,
      lang: '2',
      days: ['0', '2'],
      tags: ['a'],
      address: { city: 'Oslo', zip: '' },
    };
    expect(build(SCHEMA, filled)).toEqual({
      value: {
        name: 'Ada',
        count: 2,
        ratio: 0.5,
        loud: true,
        lang: 3,
        days: ['mon', 'wed'],
        tags: ['a'],
        address: { city: 'Oslo' },
      },
      problems: [],
    });
    // A value shown again (run again with these inputs) comes back the same.
    const inputs = build(SCHEMA, filled).value;
    expect(build(SCHEMA, draftOf(SCHEMA, form, inputs)).value).toEqual(inputs);
  });

  it("checks the schema's rules before sending, each problem at its field", () => {
    const draft = initialDraft(SCHEMA, form) as Record<string, Draft>;
    const { problems } = build(SCHEMA, {
      ...draft,
      name: 'A',
      count: '2.5',
      ratio: '0',
      days: ['0', '1', '2'],
      tags: ['ok', 'Not Ok'],
      address: { city: '', zip: '1' },
      extra: '{ nope',
    });
    expect(problems).toEqual([
      { path: ['name'], message: 'must NOT have fewer than 2 characters' },
      { path: ['count'], message: 'must be an integer' },
      { path: ['ratio'], message: 'must be > 0' },
      { path: ['days'], message: 'must NOT have more than 2 items' },
      { path: ['tags', 1], message: 'must match pattern "^[a-z]+$"' },
      { path: ['address', 'city'], message: 'is required' },
      { path: ['extra'], message: 'is not valid JSON' },
    ]);
    expect(build(SCHEMA, { ...draft, name: '', tags: [] }).problems).toEqual([
      { path: ['name'], message: 'is required' },
      { path: ['tags'], message: 'must NOT have fewer than 1 item' },
    ]);
  });

  it('leaves out an optional group nobody filled in, without asking for its required fields', () => {
    const draft = initialDraft(SCHEMA, form) as Record<string, Draft>;
    const { value, problems } = build(SCHEMA, { ...draft, name: 'Ada', tags: ['a'] });
    expect(problems).toEqual([]);
    expect(value).toEqual({ name: 'Ada', count: 2, lang: 'de', tags: ['a'] });
  });

  it('edits the inputs as JSON when the tool declares no object schema', () => {
    const free = inputsForm(undefined);
    expect(free.kind).toBe('json');
    const problems: Problem[] = [];
    expect(buildValue({}, free, '{"a": 1}', problems)).toEqual({ a: 1 });
    expect(buildValue({}, free, '', problems)).toBeUndefined();
    expect(problems).toEqual([]);
  });

  it("reads superglue's wrapped schema: the payload is the inputs, the credentials' names are offered", () => {
    const wrapped = splitWrappedSchema({
      type: 'object',
      properties: {
        payload: { type: 'object', properties: { city: { $ref: '#/$defs/city' } } },
        credentials: { type: 'object', properties: { crm_apiKey: { type: 'string' } } },
      },
      $defs: { city: { type: 'string' } },
    });
    expect(wrapped.credentialNames).toEqual(['crm_apiKey']);
    const inputs = wrapped.inputs as Schema;
    expect(inputsForm(inputs).fields?.map((field) => field.kind)).toEqual(['string']);
  });
});
