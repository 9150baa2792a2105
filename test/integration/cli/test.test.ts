/**
 * `kubeglue test` as a user runs it: a run recorded against a real HTTP target becomes a test of its tool
 * with `kubeglue test record`, and `kubeglue test -f` runs it in its own process with no server (no
 * KUBEGLUE_URL) and the target stopped: nothing is there to answer, so a pass came from the recording.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { runCli } from '../../support/cli.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { useTempDir } from '../../support/fixture.ts';
import { startHttpTarget } from '../../support/http-target.ts';

const SYSTEM_TOKEN = 'cli-test-token-never-printed-5d2e';

const tool = {
  id: 'counted',
  steps: [
    { id: 'fetch', config: { systemId: 'shop', url: '/orders', queryParams: { key: '<<shop_apiKey>>' } } },
    {
      id: 'count',
      config: { type: 'transform', transformCode: '(s) => ({ orders: s.fetch.data.orders.length })' },
    },
  ],
  outputTransform: '(sourceData) => sourceData.count.data',
};

describe('kubeglue test', () => {
  const api = useTestApi();
  const scratch = useTempDir('kubeglue-cli-test-');
  let env: Record<string, string>;
  let runId: string;

  beforeAll(async () => {
    env = { KUBEGLUE_URL: api.url, KUBEGLUE_API_KEY: TEST_ADMIN_KEY };
    const target = await startHttpTarget();
    target.route('GET', '/orders', () => ({ body: { orders: [1, 2, 3] } }));
    await api.call('POST', '/v1/systems', {
      body: {
        id: 'shop',
        url: target.url,
        authType: 'bearer',
        credentials: { bearerToken: SYSTEM_TOKEN, apiKey: 'cli-test-apikey-SECRET' },
      },
    });
    await api.call('POST', '/v1/tools', { body: tool });
    const run = await api.call<{ runId: string; status: string }>('POST', '/v1/tools/counted/run', {
      body: { options: { record: true } },
    });
    expect(run.body.status, run.text).toBe('success');
    runId = run.body.runId;
    // From here on nothing answers at the target's address.
    await target.stop();
  });

  /** `kubeglue test -f` with no server to reach: no KUBEGLUE_URL, no key. */
  const offline = (file: string, ...more: string[]) => runCli(['test', '-f', file, ...more], {});

  it('records a run as a test in a YAML tool file, which then passes offline with the target stopped', async () => {
    const file = join(scratch.path, 'tool.yaml');
    await writeFile(file, stringify({ ...tool, instruction: 'Counts the orders.' }));
    const recorded = await runCli(['test', 'record', runId, '--name', 'three orders', '-o', file], env);
    expect(recorded.stderr).toContain('added test three orders');
    expect(recorded.code).toBe(0);
    const written = parse(await readFile(file, 'utf8'));
    expect(written.instruction).toBe('Counts the orders.');
    expect(written.tests[0]).toMatchObject({ name: 'three orders', expect: { output: { orders: 3 } } });
    expect(JSON.stringify(written)).not.toContain(SYSTEM_TOKEN);
    expect(JSON.stringify(written)).not.toContain('cli-test-apikey-SECRET');

    const { code, stdout, stderr } = await offline(file);
    expect(stderr).toBe('');
    expect(stdout).toBe('pass three orders\n1 passed, 0 failed\n');
    expect(code).toBe(0);
  });

  it('fails a test when a changed transform changes the output, printing the difference (exit 1)', async () => {
    const file = join(scratch.path, 'tool.yaml');
    const document = parse(await readFile(file, 'utf8'));
    document.steps[1].config.transformCode = '(s) => ({ orders: s.fetch.data.orders.length * 2 })';
    const changed = join(scratch.path, 'changed.yaml');
    await writeFile(changed, stringify(document));
    const { code, stdout } = await offline(changed);
    expect(stdout).toContain('FAIL three orders\n  /orders: expected 3, got 6\n0 passed, 1 failed\n');
    expect(code).toBe(1);
  });

  it('passes or fails a test by its expected output schema, and answers JSON with --output json', async () => {
    const document = parse(await readFile(join(scratch.path, 'tool.yaml'), 'utf8'));
    const recording = document.tests[0].recording;
    const systems = document.tests[0].systems;
    document.tests = [
      {
        name: 'shape',
        recording,
        systems,
        expect: { outputSchema: { type: 'object', required: ['orders'] } },
      },
      {
        name: 'too few',
        recording,
        systems,
        expect: { outputSchema: { properties: { orders: { minimum: 4 } } } },
      },
    ];
    const file = join(scratch.path, 'schema.json');
    await writeFile(file, JSON.stringify(document));
    const { code, stdout } = await offline(file, '--output', 'json');
    expect(code).toBe(1);
    const answer = JSON.parse(stdout);
    expect(answer.results.map((r: { name: string; passed: boolean }) => [r.name, r.passed])).toEqual([
      ['shape', true],
      ['too few', false],
    ]);
    expect(answer.results[1].schemaErrors).toMatch(/\/orders must be >= 4/);
  });

  it('exits 2 for a file that is missing, not YAML, or no tool', async () => {
    expect((await offline(join(scratch.path, 'missing.yaml'))).code).toBe(2);
    const broken = join(scratch.path, 'broken.yaml');
    await writeFile(broken, 'steps: [unclosed');
    const notYaml = await offline(broken);
    expect(notYaml.code).toBe(2);
    expect(notYaml.stderr).toContain('is not YAML');
    const noTool = join(scratch.path, 'notool.json');
    await writeFile(noTool, JSON.stringify({ id: 'x', tests: 'none' }));
    const refused = await offline(noTool);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('is not a tool');
  });
});
