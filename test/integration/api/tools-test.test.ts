/**
 * POST /v1/tools/{toolId}/test: a saved tool's tests (Tool.tests) run against their recorded exchanges on
 * the server. The recording is a real run's against a real HTTP target, which refuses (and the file fails
 * on) any request once the run is recorded: the tests reach no system.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { Recording } from '../../../contract/api/recording.ts';
import type { ToolTestAnswer } from '../../../contract/api/tool-test-result.ts';
import { callOk, startTestApi, type TestApi } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { useSealedAfterRecording } from '../../support/recorded-systems.ts';

const TOKEN = 'tooltest-bearer-SECRET-77a1c3';

const steps = [
  { id: 'list', config: { systemId: 'crm', url: '/items', queryParams: { key: '<<crm_apiKey>>' } } },
  {
    id: 'names',
    config: { type: 'transform', transformCode: '(sourceData) => sourceData.list.data.map((i) => i.name)' },
  },
];

describe('POST /v1/tools/{toolId}/test', () => {
  const target = useHttpTarget();
  let api: TestApi;
  // The tests run on the recording: none may reach the target.
  const recorded = useSealedAfterRecording();
  let recording: Recording;

  const test = (toolId: string, key?: string) =>
    api.call<ToolTestAnswer>('POST', `/v1/tools/${toolId}/test`, key !== undefined ? { key } : {});

  beforeAll(async () => {
    api = await startTestApi();
    target.route('GET', '/items', (req) => {
      recorded.note(req.url);
      return { body: [{ name: 'a' }, { name: 'b' }] };
    });
    await callOk(api, 'POST', '/v1/systems', {
      id: 'crm',
      url: target.url,
      authType: 'bearer',
      credentials: { bearerToken: TOKEN, apiKey: 'tooltest-apikey-SECRET' },
    });
    await callOk(api, 'POST', '/v1/tools', { id: 'names', steps, outputTransform: '(s) => s.names.data' });
    const run = await api.call<{ status: string }>('POST', '/v1/tools/names/run', {
      body: { runId: 'names-1', options: { record: true } },
    });
    expect(run.body.status, run.text).toBe('success');
    recording = (await callOk<{ recording: Recording }>(api, 'GET', '/v1/runs/names-1/recording')).recording;
    recorded.seal();
  }, 60_000);

  afterAll(async () => {
    await api?.stop();
  });

  it("passes a test whose output equals the expected one, and one whose output matches expect's schema", async () => {
    await callOk(api, 'PUT', '/v1/tools/names', {
      tests: [
        { name: 'equal', recording: recording.entries, expect: { output: ['a', 'b'] } },
        {
          name: 'schema',
          recording: recording.entries,
          expect: { outputSchema: { type: 'array', items: { type: 'string' }, minItems: 2 } },
        },
      ],
    });
    const answer = await test('names');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.passed).toBe(true);
    expect(answer.body.results.map((r) => [r.name, r.passed, r.output])).toEqual([
      ['equal', true, ['a', 'b']],
      ['schema', true, ['a', 'b']],
    ]);
    expect(answer.text).not.toContain(TOKEN);
  });

  it("keeps a tool's tests out of its runs' snapshot", async () => {
    await callOk(api, 'PUT', '/v1/tools/names', {
      tests: [{ name: 'equal', recording: recording.entries, expect: { output: ['a', 'b'] } }],
    });
    recorded.unseal();
    const run = await api.call<{ status: string; tool: Record<string, unknown> }>(
      'POST',
      '/v1/tools/names/run',
      {
        body: { runId: 'names-2' },
      },
    );
    recorded.seal();
    expect(run.body.status, run.text).toBe('success');
    const view = await callOk<{ tool: Record<string, unknown> }>(api, 'GET', '/v1/runs/names-2');
    expect(view.tool.steps).toBeDefined();
    expect(view.tool).not.toHaveProperty('tests');
  });

  it('fails a test whose output differs, with the difference, and one that breaks its schema', async () => {
    await callOk(api, 'PUT', '/v1/tools/names', {
      tests: [
        { name: 'equal', recording: recording.entries, expect: { output: ['a', 'c'] } },
        { name: 'schema', recording: recording.entries, expect: { outputSchema: { type: 'object' } } },
      ],
    });
    const answer = await test('names');
    expect(answer.status).toBe(200);
    expect(answer.body.passed).toBe(false);
    const [equal, schema] = answer.body.results;
    expect(equal).toMatchObject({
      name: 'equal',
      passed: false,
      diff: { changed: true, changes: [{ path: '/1', before: 'c', after: 'b' }] },
    });
    expect(schema?.passed).toBe(false);
    expect(schema?.schemaErrors).toMatch(/must be object/);
  });

  it('fails a test whose request differs from the recorded one, naming the difference', async () => {
    await callOk(api, 'PUT', '/v1/tools/names', {
      tests: [{ name: 'other-url', recording: recording.entries, expect: { output: ['a', 'b'] } }],
      steps: [{ ...steps[0], config: { ...steps[0]?.config, url: '/things' } }, steps[1]],
    });
    const answer = await test('names');
    expect(answer.body.passed).toBe(false);
    expect(answer.body.results[0]?.error).toMatch(/differs from the recorded one: url/);
    await callOk(api, 'PUT', '/v1/tools/names', { steps });
  });

  it('refuses more tests than the bound, and two tests with one name, with a 400 naming it', async () => {
    const one = { name: 't', recording: [], expect: { output: null } };
    const many = await api.call<ErrorBody>('PUT', '/v1/tools/names', {
      body: { tests: Array.from({ length: 21 }, (_, i) => ({ ...one, name: `t${i}` })) },
    });
    expect(many.status).toBe(400);
    expect(many.body.error.message).toMatch(/tests.*20/);
    const twice = await api.call<ErrorBody>('PUT', '/v1/tools/names', { body: { tests: [one, one] } });
    expect(twice.status).toBe(400);
    expect(twice.body.error.message).toContain("duplicate test name 't'");
  });

  it('answers 404 for a tool the key may not use, as for a missing one, and 403 without runs:execute', async () => {
    const other = await callOk<{ key: string }>(api, 'POST', '/v1/api-keys', { name: 'o', toolIds: ['x'] });
    const hidden = await test('names', other.key);
    expect(hidden.status).toBe(404);
    expect((hidden.body as unknown as ErrorBody).error.code).toBe('KG_ERR_TOOL_NOT_FOUND');
    expect((await test('missing')).status).toBe(404);
    const reader = await callOk<{ key: string }>(api, 'POST', '/v1/api-keys', {
      name: 'r',
      scopes: ['runs:read'],
    });
    expect((await test('names', reader.key)).status).toBe(403);
  });
});
