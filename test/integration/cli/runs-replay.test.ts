/**
 * `kubeglue runs replay <runId> [-f tool.json]` as a user runs it: the real CLI process against a started
 * embedded API, replaying a run recorded against a real HTTP target that is not called again.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../support/cli.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { useTempDir } from '../../support/fixture.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const SYSTEM_TOKEN = 'cli-replay-token-never-printed-71c3';

function tool(transform: string) {
  return {
    id: 'cli-replayed',
    steps: [
      { id: 'fetch', config: { systemId: 'shop', url: '/orders' } },
      { id: 'count', config: { type: 'transform', transformCode: transform } },
    ],
    outputTransform: '(sourceData) => sourceData.count.data',
  };
}

describe('kubeglue runs replay', () => {
  const api = useTestApi();
  const target = useHttpTarget();
  const scratch = useTempDir('kubeglue-cli-replay-');
  let env: Record<string, string>;
  let runId: string;

  beforeAll(async () => {
    env = { KUBEGLUE_URL: api.url, KUBEGLUE_API_KEY: TEST_ADMIN_KEY };
    target.route('GET', '/orders', (req) => ({
      body: { orders: [1, 2, 3], auth: req.headers.authorization },
    }));
    await api.call('POST', '/v1/systems', {
      body: { id: 'shop', url: target.url, authType: 'bearer', credentials: { bearerToken: SYSTEM_TOKEN } },
    });
    await api.call('POST', '/v1/tools', { body: tool('(s) => ({ orders: s.fetch.data.orders.length })') });
    const run = await api.call<{ runId: string; status: string }>('POST', '/v1/tools/cli-replayed/run', {
      body: { options: { record: true } },
    });
    expect(run.body.status, run.text).toBe('success');
    runId = run.body.runId;
  });

  it('prints the output and each step unchanged for the current definition, without calling the target', async () => {
    const calls = target.count('/orders');
    const { code, stdout, stderr } = await runCli(['runs', 'replay', runId], env);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain(`Replay of run ${runId} (current definition): success; the run: success\n`);
    expect(stdout).toContain('Output: unchanged\n');
    expect(stdout).toContain('  fetch: unchanged\n  count: unchanged\n');
    expect(target.count('/orders')).toBe(calls);
  });

  it('replays the definition in -f and prints the differences as JSON pointers', async () => {
    const file = join(scratch.path, 'tool.json');
    await writeFile(
      file,
      JSON.stringify(tool('(s) => ({ orders: s.fetch.data.orders.length, first: s.fetch.data.orders[0] })')),
    );
    const calls = target.count('/orders');
    const { code, stdout } = await runCli(['runs', 'replay', runId, '-f', file], env);
    expect(code).toBe(0);
    expect(stdout).toContain('(body definition)');
    expect(stdout).toContain('Output: changed\n  /first: (none) -> 1\n');
    expect(stdout).toContain('  count: changed\n    /first: (none) -> 1\n');
    expect(stdout).not.toContain(SYSTEM_TOKEN);
    expect(stdout).not.toContain(TEST_ADMIN_KEY);
    expect(target.count('/orders')).toBe(calls);
  });

  it('exits 1 with the step that failed when the request differs from the recorded one', async () => {
    const changed = tool('(s) => s.fetch.data.orders.length');
    changed.steps[0] = { id: 'fetch', config: { systemId: 'shop', url: '/orders?all=1' } };
    const file = join(scratch.path, 'changed.json');
    await writeFile(file, JSON.stringify(changed));
    const { code, stdout } = await runCli(['runs', 'replay', runId, '-f', file, '--output', 'json'], env);
    expect(code).toBe(1);
    const answer = JSON.parse(stdout) as { diff: { steps: Array<{ stepId: string; error?: string }> } };
    expect(answer.diff.steps[0]?.error).toContain('differs from the recorded one');
  });

  it('names the refusal of a run that recorded nothing', async () => {
    const plain = await api.call<{ runId: string }>('POST', '/v1/tools/cli-replayed/run', { body: {} });
    const { code, stderr } = await runCli(['runs', 'replay', plain.body.runId], env);
    expect(code).toBe(1);
    expect(stderr).toContain('recorded nothing');
    expect(stderr).toContain('KG_ERR_RUN_NOT_REPLAYABLE');
  });
});
