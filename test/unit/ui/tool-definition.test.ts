/**
 * The step builder's edits of a tool definition, without a browser (ui/pages/tools/definition.ts): each
 * edit changes the one field it names, keeps every other field (unknown ones included) in its place, and
 * the text the builder writes parses back to the same definition. The browser test
 * (test/integration/ui/tool-builder.test.ts) drives them through the page.
 */
import { describe, expect, it } from 'vitest';
import {
  formatDefinition,
  parseDefinition,
  placeIssue,
  protocolOfUrl,
  withConfigField,
  withField,
  withNewStep,
  withoutStep,
  withStepMoved,
} from '../../../ui/pages/tools/definition.ts';

const DEFINITION = {
  id: 'orders',
  futureField: { kept: true },
  steps: [
    { id: 'list', instruction: 'the orders', config: { systemId: 'shop', url: '/orders', graphqlLater: 1 } },
    { id: 'shape', config: { type: 'transform', transformCode: '(s) => s.list.data' }, extra: [1, 2] },
  ],
  outputTransform: '(s) => s.shape.data',
};

const parsed = (text: string) => {
  const result = parseDefinition(text);
  if (!result.ok) throw new Error(result.message);
  return result.value;
};

describe('the step builder keeps the definition it did not edit', () => {
  it('writes text that reads back to the same definition, unknown fields and key order kept', () => {
    const text = formatDefinition(DEFINITION);
    expect(text).toBe(JSON.stringify(DEFINITION, null, 2));
    expect(formatDefinition(parsed(text))).toBe(text);
  });

  it('changes one config field in its place and nothing else', () => {
    const changed = withConfigField(DEFINITION, 0, 'url', '/orders?open');
    expect(formatDefinition(changed)).toBe(
      JSON.stringify(DEFINITION, null, 2).replace('"url": "/orders"', '"url": "/orders?open"'),
    );
    // A field set anew goes last; removing it gives the original back.
    const method = withConfigField(DEFINITION, 0, 'method', 'POST');
    expect(Object.keys((method.steps as { config: object }[])[0]?.config ?? {})).toEqual([
      'systemId',
      'url',
      'graphqlLater',
      'method',
    ]);
    expect(withConfigField(method, 0, 'method', undefined)).toEqual(DEFINITION);
  });

  it('removes a tool field set to undefined and leaves the others', () => {
    const { outputTransform: _gone, ...rest } = DEFINITION;
    expect(withField(DEFINITION, 'outputTransform', undefined)).toEqual(rest);
  });

  it('adds steps with unused ids, moves and removes them', () => {
    const added = withNewStep(withNewStep(DEFINITION, 'transform'), 'transform');
    const ids = (definition: Record<string, unknown>) =>
      (definition.steps as { id: string }[]).map((step) => step.id);
    expect(ids(added)).toEqual(['list', 'shape', 'transform', 'transform2']);
    expect(ids(withStepMoved(added, 3, -1))).toEqual(['list', 'shape', 'transform2', 'transform']);
    expect(withStepMoved(added, 0, -1)).toBe(added);
    expect(withoutStep(withoutStep(added, 3), 2)).toEqual(DEFINITION);
    expect(withStepMoved(withStepMoved(DEFINITION, 0, 1), 1, -1)).toEqual(DEFINITION);
  });

  it('refuses text it cannot show as cards, with the reason', () => {
    expect(parseDefinition('{"id": ')).toMatchObject({ ok: false, message: /does not parse/ });
    expect(parseDefinition('[1]')).toMatchObject({ ok: false, message: /must be a JSON object/ });
    expect(parseDefinition('{"steps": {}}')).toMatchObject({
      ok: false,
      message: /"steps" must be an array/,
    });
    expect(parseDefinition('{"steps": [1]}')).toMatchObject({ ok: false, message: /every step/ });
  });
});

describe('where an API issue shows in the builder', () => {
  it("places a step's field, inside a try's tool too, with the line in the code", () => {
    expect(
      placeIssue({
        path: ['steps', 1, 'config', 'transformCode'],
        message: 'SyntaxError',
        line: 2,
        column: 5,
      }),
    ).toEqual({ step: 1, field: 'config.transformCode', message: 'SyntaxError (line 2, column 5)' });
    expect(placeIssue({ path: ['tool', 'steps', 0, 'id'], message: 'bad id' })).toEqual({
      step: 0,
      field: 'id',
      message: 'bad id',
    });
    expect(placeIssue({ path: ['outputTransform'], message: 'x' })).toEqual({
      step: undefined,
      field: 'outputTransform',
      message: 'x',
    });
  });
});

describe('the body hint follows the URL scheme', () => {
  it.each([
    ['/users', 'http'],
    ['https://a.example/x', 'http'],
    ['postgresql://db/x', 'postgres'],
    ['mariadb://db/x', 'mysql'],
    ['rediss://cache', 'redis'],
    ['ftps://files', 'ftp'],
    ['sftp://files', 'sftp'],
    ['smb://share', 'smb'],
    ['gopher://x', 'unknown'],
  ])('%s is %s', (url, protocol) => {
    expect(protocolOfUrl(url)).toBe(protocol);
  });
});
