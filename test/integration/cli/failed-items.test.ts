/**
 * Issue 29, item 12: a loop step that goes on past failed items (failureBehavior continue) succeeds, and
 * the CLI says which items failed: under the step in `run --follow` and `logs`, on stderr after a plain
 * `run`. The real CLI process against a started embedded API whose tool calls a real HTTP target.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../support/cli.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

describe('failed loop items in the kubeglue CLI', () => {
  const api = useTestApi();
  const target = useHttpTarget();
  let env: Record<string, string>;
  /** What the HTTP step reports for a todo the target does not have. */
  let notFound: (id: number) => string;

  beforeAll(async () => {
    env = { KUBEGLUE_URL: api.url, KUBEGLUE_API_KEY: TEST_ADMIN_KEY };
    notFound = (id) => `HTTP 404 GET ${target.url}/todos/${id}: {"error":"todo ${id} not found"}`;
    // Todos 1 to 3 exist; 4 to 11 are a 404.
    for (const id of [1, 2, 3]) target.route('GET', `/todos/${id}`, { body: { id, title: `todo ${id}` } });
    for (const id of [4, 5, 6, 7, 8, 9, 10, 11]) {
      target.route('GET', `/todos/${id}`, { status: 404, body: { error: `todo ${id} not found` } });
    }
    await api.call('POST', '/v1/systems', { body: { id: 'shop', url: target.url } });
    const loopTool = (id: string, ids: number[]) => ({
      id,
      steps: [
        {
          id: 'todos',
          dataSelector: `() => ${JSON.stringify(ids)}`,
          failureBehavior: 'continue',
          config: { systemId: 'shop', url: '/todos/<<currentItem>>' },
        },
      ],
      outputTransform: '(s) => s.todos.filter((item) => item.success).map((item) => item.data.title)',
    });
    for (const tool of [
      loopTool('some-todos', [1, 4, 2, 5, 6]),
      loopTool('many-missing', [1, 4, 5, 6, 7, 8, 9, 10, 11]),
    ]) {
      expect((await api.call('POST', '/v1/tools', { body: tool })).status).toBe(201);
    }
  });

  it('lists each failed item under the step with --follow, and exits 0', async () => {
    const { code, stdout } = await runCli(['run', 'some-todos', '--follow'], env);
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    const step = lines.findIndex((line) =>
      /^Step 'todos' succeeded in \d+ ms; 3 of 5 items failed$/.test(line),
    );
    expect(step).toBeGreaterThan(0);
    expect(lines.slice(step + 1, step + 4)).toEqual([
      `  item 1 failed: ${notFound(4)}`,
      `  item 3 failed: ${notFound(5)}`,
      `  item 4 failed: ${notFound(6)}`,
    ]);
    expect(JSON.parse(lines.slice(lines.indexOf('[')).join('\n'))).toEqual(['todo 1', 'todo 2']);
  });

  it('says how many more failed than an event lists, and where to see them (--async --follow)', async () => {
    const { code, stdout } = await runCli(['run', 'many-missing', '--async', '--follow'], env);
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    const step = lines.findIndex((line) =>
      /^Step 'todos' succeeded in \d+ ms; 8 of 9 items failed$/.test(line),
    );
    expect(step).toBeGreaterThan(0);
    const runId = /^Run (\S+) of tool 'many-missing' started$/.exec(lines[0] ?? '')?.[1];
    expect(lines.slice(step + 1, step + 7)).toEqual([
      `  item 1 failed: ${notFound(4)}`,
      `  item 2 failed: ${notFound(5)}`,
      `  item 3 failed: ${notFound(6)}`,
      `  item 4 failed: ${notFound(7)}`,
      `  item 5 failed: ${notFound(8)}`,
      `  … and 3 more failed items (kubeglue logs ${runId} lists the first 100)`,
    ]);
  });

  it('lists every failed item under the step in logs', async () => {
    const ran = await runCli(['run', 'many-missing', '--output', 'json'], env);
    const { runId } = JSON.parse(ran.stdout) as { runId: string };
    const { code, stdout } = await runCli(['logs', runId], env);
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines.slice(1, -1)).toEqual([
      "Step 'todos' succeeded; 8 of 9 items failed",
      ...[4, 5, 6, 7, 8, 9, 10, 11].map((id, i) => `  item ${i + 1} failed: ${notFound(id)}`),
    ]);
  });

  it('names the step whose items failed on stderr after a plain run, keeping stdout the output', async () => {
    const { code, stdout, stderr } = await runCli(['run', 'some-todos'], env);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual(['todo 1', 'todo 2']);
    expect(stderr).toMatch(
      /^kubeglue run: step 'todos': 3 of 5 items failed \(kubeglue logs \S+ lists them\)\n$/,
    );
  });

  it('keeps the failed items in the run record of --output json', async () => {
    const { code, stdout } = await runCli(['run', 'some-todos', '--output', 'json'], env);
    expect(code).toBe(0);
    const run = JSON.parse(stdout) as { stepResults: Array<{ loop?: unknown }> };
    expect(run.stepResults[0]?.loop).toEqual({
      items: 5,
      failed: 3,
      failedItems: [
        { index: 1, error: notFound(4) },
        { index: 3, error: notFound(5) },
        { index: 4, error: notFound(6) },
      ],
    });
  });
});
