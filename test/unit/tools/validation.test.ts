import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../contract/api/errors.ts';
import { Tool, type ToolInput } from '../../../contract/api/tool.ts';
import {
  checkTool,
  findToolProblems,
  problemLine,
  validateToolDefinition,
} from '../../../tools/validation.ts';

const knownSystems = new Set(['crm', 'billing']);
const opts = { systemExists: async (id: string) => knownSystems.has(id) };

function tool(input: Omit<ToolInput, 'id'>): Tool {
  return Tool.parse({ id: 'sample', ...input });
}

async function problemsOf(input: Omit<ToolInput, 'id'>): Promise<string[]> {
  return findToolProblems(tool(input), opts);
}

async function rejection(input: Omit<ToolInput, 'id'>): Promise<ApiError> {
  const error = await validateToolDefinition(tool(input), opts).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(error)}`);
  return error;
}

const fetchStep = { id: 'fetch', config: { url: 'https://example.test/items' } };

describe('validateToolDefinition', () => {
  it('accepts a valid tool using every checked field', async () => {
    const valid = tool({
      inputSchema: { type: 'object', properties: { since: { type: 'string' } } },
      steps: [
        {
          id: 'fetch',
          dataSelector: '(s) => s.ids',
          config: {
            url: 'https://example.test/items/<<(s) => s.currentItem>>?since=<<since>>',
            headers: { Authorization: 'Bearer <<crm_apiKey>>', 'X-Shift': '<<(s) => (s.n >> 1)>>' },
            queryParams: { limit: '<<limit>>', tags: ['a', '<<(s) => s.tag>>'] },
            body: { nested: { value: '<<(s) => s.since>>' } },
            systemId: 'crm',
            pagination: {
              type: 'cursorBased',
              cursorPath: 'meta.next',
              pageSize: '25',
              stopCondition: '(response, pageInfo) => pageInfo.page > 3',
            },
          },
        },
        { id: 'shape', config: { type: 'transform', transformCode: 'async (s) => s.fetch.data' } },
      ],
      outputTransform: '(s) => ({ items: s.shape.data })',
      outputSchema: { type: 'object', required: ['items'] },
    });
    await expect(validateToolDefinition(valid, opts)).resolves.toMatchObject({ id: 'sample' });
  });

  it('names the step and field of transform code that does not compile', async () => {
    const error = await rejection({
      steps: [fetchStep, { id: 'transform', config: { type: 'transform', transformCode: '(s) => s.)' } }],
    });
    expect(error.statusCode).toBe(422);
    expect(error.message).toBe(
      "Invalid tool: steps[1] (transform).config.transformCode: SyntaxError at line 1, column 10: Unexpected token ')'",
    );
  });

  it('refuses transform code that compiles but is not a function', async () => {
    expect(
      await problemsOf({ steps: [{ id: 'shape', config: { type: 'transform', transformCode: 's.items' } }] }),
    ).toEqual([expect.stringMatching(/^steps\[0\] \(shape\)\.config\.transformCode: .*function/)]);
  });

  it('names a dataSelector that does not compile', async () => {
    expect(await problemsOf({ steps: [{ ...fetchStep, dataSelector: '(s) => {' }] })).toEqual([
      expect.stringMatching(/^steps\[0\] \(fetch\)\.dataSelector: SyntaxError/),
    ]);
  });

  it('names a stopCondition that does not compile', async () => {
    const problems = await problemsOf({
      steps: [
        fetchStep,
        {
          id: 'list',
          config: {
            url: 'https://example.test/list',
            pagination: { type: 'pageBased', stopCondition: '(response) => response.data.length ===' },
          },
        },
      ],
    });
    expect(problems).toEqual([
      expect.stringMatching(/^steps\[1\] \(list\)\.config\.pagination\.stopCondition: /),
    ]);
  });

  it('names an outputTransform that does not compile', async () => {
    expect(await problemsOf({ steps: [fetchStep], outputTransform: '(s) => s.fetch.data +' })).toEqual([
      expect.stringMatching(/^outputTransform: SyntaxError/),
    ]);
  });

  it('names a header whose template expression does not compile', async () => {
    const problems = await problemsOf({
      steps: [
        { id: 'fetch', config: { url: 'https://example.test', headers: { Authorization: '<<(s) => s.>>' } } },
      ],
    });
    expect(problems).toEqual([
      expect.stringMatching(
        /^steps\[0\] \(fetch\)\.config\.headers\.Authorization: template expression at position 0 does not compile: SyntaxError/,
      ),
    ]);
  });

  it('names template syntax errors in the url, a query value and a JSON body leaf', async () => {
    const problems = await problemsOf({
      steps: [
        {
          id: 'fetch',
          config: {
            method: 'POST',
            url: 'https://example.test/<<a + 1>>',
            queryParams: { 'page size': ['1', '<<unterminated'] },
            body: { items: [{ name: '<<>>' }] },
          },
        },
      ],
    });
    expect(problems).toEqual([
      expect.stringMatching(/^steps\[0\] \(fetch\)\.config\.url: Template expression '<<a \+ 1>>'.*neither/),
      expect.stringMatching(
        /^steps\[0\] \(fetch\)\.config\.queryParams\["page size"\]\[1\]: Unterminated template expression/,
      ),
      expect.stringMatching(
        /^steps\[0\] \(fetch\)\.config\.body\.items\[0\]\.name: Empty template expression/,
      ),
    ]);
  });

  it('names a function expression that does not compile inside a string body', async () => {
    const problems = await problemsOf({
      steps: [
        {
          id: 'send',
          config: {
            url: 'https://example.test',
            method: 'POST',
            body: 'id=<<(s) => s.id>>&x=<<(s) => s.)>>',
          },
        },
      ],
    });
    expect(problems).toEqual([
      expect.stringMatching(
        /^steps\[0\] \(send\)\.config\.body: template expression at position 21 does not compile/,
      ),
    ]);
  });

  it('refuses cursor pagination without a cursorPath', async () => {
    const problems = await problemsOf({
      steps: [{ id: 'list', config: { url: 'https://example.test', pagination: { type: 'cursorBased' } } }],
    });
    expect(problems).toEqual([
      'steps[0] (list).config.pagination: cursorBased pagination needs a cursorPath',
    ]);
  });

  it('refuses input and output schemas that are not valid JSON Schema', async () => {
    const problems = await problemsOf({
      inputSchema: { type: 'objekt' },
      steps: [fetchStep],
      outputSchema: { type: 'object', required: 'items' },
    });
    expect(problems).toEqual([
      expect.stringMatching(/^inputSchema: not a valid JSON Schema: /),
      expect.stringMatching(/^outputSchema: not a valid JSON Schema: /),
    ]);
  });

  it('names each step whose system does not exist, looking each system up once', async () => {
    const looked: string[] = [];
    const problems = await findToolProblems(
      tool({
        steps: [
          { id: 'a', config: { url: '/x', systemId: 'crm' } },
          { id: 'b', config: { url: '/y', systemId: 'erp' } },
          { id: 'c', config: { url: '/z', systemId: 'erp' } },
        ],
      }),
      {
        systemExists: async (id) => {
          looked.push(id);
          return knownSystems.has(id);
        },
      },
    );
    expect(problems).toEqual([
      "steps[1] (b).config.systemId: system 'erp' does not exist",
      "steps[2] (c).config.systemId: system 'erp' does not exist",
    ]);
    expect(looked.sort()).toEqual(['crm', 'erp']);
  });

  it('lists every problem in one error, not just the first', async () => {
    const error = await rejection({
      inputSchema: { type: 'objekt' },
      steps: [
        {
          id: 'fetch',
          dataSelector: 'nope(',
          config: { url: 'https://example.test/<<>>', systemId: 'ghost' },
        },
        { id: 'shape', config: { type: 'transform', transformCode: '(s) =>' } },
      ],
      outputTransform: '(s) => {',
    });
    expect(error.statusCode).toBe(422);
    const problems = error.message.replace(/^Invalid tool: /, '');
    for (const field of [
      'inputSchema:',
      'steps[0] (fetch).dataSelector:',
      'steps[0] (fetch).config.url:',
      'steps[1] (shape).config.transformCode:',
      'outputTransform:',
      "steps[0] (fetch).config.systemId: system 'ghost' does not exist",
    ]) {
      expect(problems).toContain(field);
    }
  });
});

describe('checkTool (the one check of REST saves and applied Tool resources)', () => {
  const lines = async (input: unknown) => (await checkTool(input, opts)).problems.map(problemLine);

  it('names duplicate and reserved step ids, and ids that shadow an input', async () => {
    expect(
      await lines({
        id: 'sample',
        inputSchema: { type: 'object', properties: { users: { type: 'string' } } },
        steps: [fetchStep, fetchStep, { ...fetchStep, id: 'credentials' }, { ...fetchStep, id: 'users' }],
      }),
    ).toEqual([
      "steps[1].id: duplicate step id 'fetch'",
      "steps[2].id: 'credentials' is a reserved name and cannot be a step id",
      "steps[3].id: step id 'users' would shadow the input 'users' declared in inputSchema",
    ]);
  });

  it('names a missing url or transform code instead of failing on them', async () => {
    const checked = await checkTool(
      {
        id: 'sample',
        steps: [
          { id: 'fetch', config: { type: 'request' } },
          { id: 'shape', config: { type: 'transform' } },
        ],
      },
      opts,
    );
    expect(checked.tool).toBeUndefined();
    expect(checked.problems.map(problemLine)).toEqual([
      'steps[0].config.url: Invalid input: expected string, received undefined',
      'steps[1].config.transformCode: Invalid input: expected string, received undefined',
    ]);
    expect(checked.problems[0]?.path).toEqual(['steps', 0, 'config', 'url']);
  });

  it('asks authorize before it looks any system up', async () => {
    const asked: string[] = [];
    const refusal = new Error('refused');
    const checked = checkTool(
      { id: 'sample', steps: [{ id: 'a', config: { url: '/x', systemId: 'nowhere' } }] },
      {
        systemExists: async (id) => {
          asked.push(id);
          return false;
        },
        authorize: () => {
          throw refusal;
        },
      },
    );
    await expect(checked).rejects.toBe(refusal);
    expect(asked).toEqual([]);
  });

  it('a well-formed tool gets the semantic checks, with the step id in each field', async () => {
    const checked = await checkTool(
      { id: 'sample', steps: [{ id: 'a', config: { type: 'transform', transformCode: '(s) => {' } }] },
      opts,
    );
    expect(checked.tool?.id).toBe('sample');
    expect(checked.problems.map(problemLine)[0]).toMatch(/^steps\[0\] \(a\)\.config\.transformCode: /);
  });
});
