/**
 * POST /v1/tools/{toolId}/tests: a recorded run saved as a test of its tool (the dashboard's one click),
 * made by the conversion `kubeglue test record` uses (contract/api/tool-test.ts). A real run against a
 * real HTTP target records the exchanges; the saved test then passes on the server with the target no
 * longer answering. Runs that cannot be tests and the tool's test bounds answer catalog errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import { MAX_TOOL_TESTS, type SavedToolTest, type ToolTest } from '../../../contract/api/tool-test.ts';
import type { ToolTestAnswer } from '../../../contract/api/tool-test-result.ts';
import { callOk, startTestApi, type TestApi } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const TOKEN = 'fromrun-bearer-SECRET-5e1d';

describe('POST /v1/tools/{toolId}/tests saves a recorded run as a test', () => {
  const target = useHttpTarget();
  let api: TestApi;
  let answering = true;

  const save = (toolId: string, body: unknown) =>
    api.call<SavedToolTest & ErrorBody>('POST', `/v1/tools/${toolId}/tests`, { body });
  const run = async (toolId: string, body: unknown) => {
    const answer = await api.call<{ runId: string; status: string }>('POST', `/v1/tools/${toolId}/run`, {
      body,
    });
    return answer.body;
  };

  beforeAll(async () => {
    api = await startTestApi();
    target.route('GET', '/items', (req) =>
      answering
        ? { body: [{ name: 'a', auth: req.headers.authorization }, { name: 'b' }] }
        : { status: 503, body: { error: 'down' } },
    );
    target.route('GET', '/big', { body: { rows: 'x'.repeat(120_000) } });
    await callOk(api, 'POST', '/v1/systems', {
      id: 'crm',
      url: target.url,
      authType: 'bearer',
      credentials: { bearerToken: TOKEN },
    });
    await callOk(api, 'POST', '/v1/tools', {
      id: 'names',
      steps: [{ id: 'list', config: { systemId: 'crm', url: '/items' } }],
      outputTransform: '(s) => s.list.data.map((item) => item.name)',
    });
    await callOk(api, 'POST', '/v1/tools', {
      id: 'big',
      steps: [{ id: 'rows', config: { systemId: 'crm', url: '/big' } }],
    });
  }, 60_000);

  afterAll(async () => {
    await api?.stop();
  });

  it('adds the run as a test (inputs, recording without the credential, output), which passes offline', async () => {
    const recorded = await run('names', { runId: 'names-rec', inputs: { q: 1 }, options: { record: true } });
    expect(recorded.status).toBe('success');
    const saved = await save('names', { fromRun: 'names-rec' });
    expect(saved.status, saved.text).toBe(201);
    expect(saved.body).toEqual({
      toolId: 'names',
      name: 'names-rec',
      replaced: false,
      exchanges: 1,
      tests: ['names-rec'],
    });
    const tool = await callOk<{ tests: ToolTest[] }>(api, 'GET', '/v1/tools/names');
    expect(tool.tests).toHaveLength(1);
    expect(tool.tests[0]).toMatchObject({
      name: 'names-rec',
      inputs: { q: 1 },
      systems: { crm: target.url },
      expect: { output: ['a', 'b'] },
    });
    expect(JSON.stringify(tool)).not.toContain(TOKEN);

    answering = false;
    try {
      const tested = await callOk<ToolTestAnswer>(api, 'POST', '/v1/tools/names/test');
      expect(tested.passed).toBe(true);
      expect(tested.results.map((result) => result.name)).toEqual(['names-rec']);
    } finally {
      answering = true;
    }
  });

  it('replaces the test of the same name and keeps the others', async () => {
    await run('names', { runId: 'names-rec-2', options: { record: true } });
    const named = await save('names', { fromRun: 'names-rec-2', name: 'two' });
    expect(named.body).toMatchObject({ name: 'two', replaced: false, tests: ['names-rec', 'two'] });
    const again = await save('names', { fromRun: 'names-rec', name: 'two' });
    expect(again.body).toMatchObject({ name: 'two', replaced: true, tests: ['names-rec', 'two'] });
  });

  it('refuses a run that recorded nothing, one that failed, and one of another tool, saying why', async () => {
    await run('names', { runId: 'names-plain' });
    const plain = await save('names', { fromRun: 'names-plain' });
    expect(plain.status).toBe(409);
    expect(plain.body.error.code).toBe('KG_ERR_RUN_NOT_A_TEST');
    expect(plain.body.error.message).toContain('recorded nothing');

    answering = false;
    try {
      expect((await run('names', { runId: 'names-failed', options: { record: true } })).status).toBe(
        'failed',
      );
    } finally {
      answering = true;
    }
    const failed = await save('names', { fromRun: 'names-failed' });
    expect(failed.status).toBe(409);
    expect(failed.body.error.message).toContain('a test expects the output of a run that succeeded');

    await run('big', { runId: 'big-rec', options: { record: true } });
    const other = await save('names', { fromRun: 'big-rec' });
    expect(other.status).toBe(409);
    expect(other.body.error.message).toContain('a run of another tool');

    const missing = await save('names', { fromRun: 'no-such-run' });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('KG_ERR_RUN_NOT_FOUND');
  });

  it(`refuses a test past the tool's bounds: ${MAX_TOOL_TESTS} tests, 512 KiB together`, async () => {
    for (let index = 0; index < 2; index++) {
      const saved = await save('big', { fromRun: 'big-rec', name: `big-${index}` });
      expect(saved.status, saved.text).toBe(201);
    }
    const tooLarge = await save('big', { fromRun: 'big-rec', name: 'big-2' });
    expect(tooLarge.status).toBe(422);
    expect(tooLarge.body.error.code).toBe('KG_ERR_TOOL_TESTS_LIMIT');
    expect(tooLarge.body.error.message).toMatch(
      /^The tests of tool 'big' would be \d+ bytes of JSON together with this one, more than 524288/,
    );

    const tool = await callOk<{ tests: ToolTest[] }>(api, 'GET', '/v1/tools/names');
    const filler = Array.from({ length: MAX_TOOL_TESTS }, (_, index) => ({
      ...tool.tests[0],
      name: `t${index}`,
    }));
    await callOk(api, 'PUT', '/v1/tools/names', { tests: filler });
    const full = await save('names', { fromRun: 'names-rec', name: 'one-more' });
    expect(full.status).toBe(422);
    expect(full.body.error).toMatchObject({
      code: 'KG_ERR_TOOL_TESTS_LIMIT',
      message: `Tool 'names' has ${MAX_TOOL_TESTS} tests, the most a tool may carry (${MAX_TOOL_TESTS}); the test was not added`,
    });
    // A test of a name it has replaces it: no bound is passed.
    expect((await save('names', { fromRun: 'names-rec', name: 't3' })).status).toBe(201);
  });
});
