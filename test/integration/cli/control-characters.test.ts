/**
 * What the CLI prints from the API never reaches the terminal as a command. Run errors and events quote
 * what a system answered, which the API cannot refuse; ids and names stored before the API refused
 * control characters (or sent by a server the CLI has no reason to trust) may hold them too. Text output
 * shows each as an escape (`\x1b`), JSON output as `\u001b`, the same value once parsed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, runCli } from '../../support/cli.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { type HttpTarget, startHttpTarget, useHttpTarget } from '../../support/http-target.ts';

/** OSC 52 (write the clipboard), clear the screen, red, a one-byte C1 CSI, DEL, a bell. */
const HOSTILE = '\x1b]52;c;ZWNobyBvd25lZA==\x07\x1b[2J\x1b[31mred\x9b2J\x7f';
/** How text output shows HOSTILE. */
const ESCAPED = '\\x1b]52;c;ZWNobyBvd25lZA==\\x07\\x1b[2J\\x1b[31mred\\x9b2J\\x7f';

/** The control characters of `text`, but the line feeds ending its lines: none may reach a pipe. */
function rawControls(text: string): string[] {
  return [...text].filter((character) => {
    const code = character.charCodeAt(0);
    return (code < 0x20 && code !== 0x0a) || (code >= 0x7f && code <= 0x9f);
  });
}

function expectNoRawControl({ stdout, stderr }: CliResult): void {
  expect(rawControls(stdout)).toEqual([]);
  expect(rawControls(stderr)).toEqual([]);
}

describe('the CLI escapes control characters the API sends', () => {
  describe('from a run: its error, its events, its record', () => {
    const api = useTestApi();
    const target = useHttpTarget();
    let env: Record<string, string>;

    beforeAll(async () => {
      env = { KUBEGLUE_URL: api.url, KUBEGLUE_API_KEY: TEST_ADMIN_KEY };
      target.route('GET', '/hostile', {
        status: 500,
        headers: { 'content-type': 'text/plain' },
        body: `the warehouse says ${HOSTILE}`,
      });
      await api.call('POST', '/v1/systems', { body: { id: 'shop', url: target.url } });
      const created = await api.call('POST', '/v1/tools', {
        body: { id: 'hostile', steps: [{ id: 'fetch', config: { systemId: 'shop', url: '/hostile' } }] },
      });
      expect(created.status).toBe(201);
    });

    it('kubeglue run: the error of the failed run', async () => {
      const result = await runCli(['run', 'hostile'], env);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`the warehouse says ${ESCAPED}`);
      expectNoRawControl(result);
    });

    it('kubeglue run --follow: the events', async () => {
      const result = await runCli(['run', 'hostile', '--follow'], env);
      expect(result.code).toBe(1);
      expect(result.stdout).toMatch(/^Step 'fetch' failed/m);
      expect(result.stdout).toContain(ESCAPED);
      expectNoRawControl(result);
    });

    it('kubeglue logs: the stored record, with and without --follow', async () => {
      const { stdout } = await runCli(['run', 'hostile', '--output', 'json'], env);
      const { runId } = JSON.parse(stdout) as { runId: string };
      for (const args of [
        ['logs', runId],
        ['logs', runId, '--follow'],
      ]) {
        const result = await runCli(args, env);
        expect(result.code).toBe(1);
        expect(result.stdout).toContain(ESCAPED);
        expectNoRawControl(result);
      }
    });

    it('--output json: escaped by JSON, DEL and C1 too, and the same text once parsed', async () => {
      const result = await runCli(['run', 'hostile', '--output', 'json'], env);
      expect(result.code).toBe(1);
      expectNoRawControl(result);
      expect(result.stdout).toContain('\\u001b]52;c;');
      expect(result.stdout).toContain('\\u009b2J\\u007f');
      const run = JSON.parse(result.stdout) as { error: string };
      expect(run.error).toContain(`the warehouse says ${HOSTILE}`);
    });

    it("the API's error message, which quotes the id asked for", async () => {
      const result = await runCli(['run', 'x\x1b[2J'], env);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("Tool 'x\\x1b[2J' not found");
      expectNoRawControl(result);
    });
  });

  describe('from a server answering ids and names that hold them', () => {
    let server: HttpTarget;
    let env: Record<string, string>;
    const tool = {
      id: `evil${HOSTILE}`,
      name: `name${HOSTILE}`,
      instruction: `Reads\tthe todos\n${HOSTILE}`,
      steps: [{}],
      updatedAt: '2026-01-02T03:04:05.000Z',
    };
    const schedule = {
      id: 'nightly',
      toolId: `evil${HOSTILE}`,
      cronExpression: `${HOSTILE} * * * *`,
      timezone: 'UTC',
      enabled: true,
      nextRunAt: null,
    };
    const run = {
      runId: `run${HOSTILE}`,
      toolId: `evil${HOSTILE}`,
      status: 'failed',
      requestSource: 'api',
      metadata: { startedAt: '2026-01-02T03:04:05.000Z', durationMs: 12 },
    };

    beforeAll(async () => {
      server = await startHttpTarget();
      env = { KUBEGLUE_URL: server.url, KUBEGLUE_API_KEY: TEST_ADMIN_KEY };
      server.route('GET', '/v1/tools', {
        body: { data: [tool], page: 1, limit: 100, total: 1, hasMore: false },
      });
      server.route('GET', '/v1/schedules', {
        body: { data: [schedule], page: 1, limit: 100, total: 1, hasMore: false },
      });
      server.route('GET', '/v1/runs', {
        body: { data: [run], page: 1, limit: 20, total: 1, hasMore: false, nextCursor: null },
      });
      // A successful run whose loop step went on past a failed item: the CLI names that step.
      server.route('POST', '/v1/tools/evil/run', {
        body: {
          ...run,
          status: 'success',
          data: [],
          stepResults: [
            {
              stepId: `todos${HOSTILE}`,
              success: true,
              loop: { items: 2, failed: 1, failedItems: [{ index: 1, error: 'HTTP 404' }] },
            },
          ],
        },
      });
    });
    afterAll(async () => {
      await server?.stop();
    });

    it('kubeglue tools: the id and the instruction', async () => {
      const result = await runCli(['tools'], env);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`evil${ESCAPED}`);
      expect(result.stdout).toContain('Reads the todos \\x1b]52;c;');
      expectNoRawControl(result);
    });

    it('kubeglue schedules: the tool id and the cron expression', async () => {
      const result = await runCli(['schedules'], env);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`evil${ESCAPED}`);
      expect(result.stdout).toContain(`${ESCAPED} * * * *`);
      expectNoRawControl(result);
    });

    it('kubeglue runs: the run id and the tool id', async () => {
      const result = await runCli(['runs'], env);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`run${ESCAPED}`);
      expect(result.stdout).toContain(`evil${ESCAPED}`);
      expectNoRawControl(result);
    });

    it("kubeglue run: the id of a loop step whose items failed, and the run's id", async () => {
      const result = await runCli(['run', 'evil'], env);
      expect(result.code).toBe(0);
      expect(result.stderr).toContain(
        `step 'todos${ESCAPED}': 1 of 2 items failed (kubeglue logs run${ESCAPED}`,
      );
      expectNoRawControl(result);
    });

    it.each([['tools'], ['schedules'], ['runs']])(
      'kubeglue %s --output json: the same values once parsed, nothing raw',
      async (command) => {
        const result = await runCli([command, '--output', 'json'], env);
        expect(result.code).toBe(0);
        expectNoRawControl(result);
        const [first] = JSON.parse(result.stdout) as Array<{ toolId?: string; id: string }>;
        expect(first?.toolId ?? first?.id).toBe(`evil${HOSTILE}`);
      },
    );
  });
});
