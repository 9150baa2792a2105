/**
 * `kubeglue try <file> --until <stepId>` and `kubeglue runs resume <runId>` as a user runs them: the real
 * CLI process against a started embedded API whose tools call a real HTTP target.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION } from '../../../contract/resources/meta.ts';
import { runCli } from '../../support/cli.ts';
import { TEST_ADMIN_KEY, useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const ESC = '\x1b';
const SYSTEM_TOKEN = 'cli-try-token-never-printed-4b9d';

interface RunRecord {
  runId: string;
  status: string;
  resumedFrom?: string;
  requestSource?: string;
  data?: unknown;
  stepResults?: Array<{ stepId: string; success: boolean; reusedFrom?: string }>;
  until?: { stepId: string; nextStepId?: string; sourceDataKeys: string[]; sourceData?: unknown };
}

/** user (echoes the auth header) → orders → notify. */
const DRAFT = {
  id: 'cli-draft',
  steps: [
    { id: 'user', config: { systemId: 'shop', url: '/user' } },
    { id: 'orders', config: { systemId: 'shop', url: '/orders' } },
    { id: 'notify', config: { systemId: 'shop', url: '/notify', method: 'POST' } },
  ],
};

describe('kubeglue try and kubeglue runs resume', () => {
  const api = useTestApi();
  const target = useHttpTarget();
  let scratch: string;
  let draftFile: string;
  let env: Record<string, string>;
  /** What /sink answers: 500 fails the step that posts to it. */
  let sinkStatus = 500;

  const runCount = async () => (await api.call<{ total: number }>('GET', '/v1/runs?limit=1')).body.total;

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'kubeglue-cli-try-'));
    env = { KUBEGLUE_URL: api.url, KUBEGLUE_API_KEY: TEST_ADMIN_KEY };
    target.route('GET', '/user', (req) => ({
      body: { name: `Ada${ESC}[2J`, auth: req.headers.authorization, region: 'eu' },
    }));
    target.route('GET', '/orders', { body: [{ order: 1 }] });
    target.route('POST', '/notify', { body: { sent: true } });
    target.route('GET', '/source', { body: { items: [1, 2] } });
    target.route('POST', '/sink', (req) =>
      sinkStatus === 200
        ? { body: { stored: (req.json as { items: number[] }).items.length } }
        : { status: 400 },
    );
    await api.call('POST', '/v1/systems', {
      body: { id: 'shop', url: target.url, authType: 'bearer', credentials: { bearerToken: SYSTEM_TOKEN } },
    });
    draftFile = join(scratch, 'tool.json');
    await writeFile(draftFile, JSON.stringify(DRAFT));
    await api.call('POST', '/v1/tools', {
      body: {
        id: 'cli-pipeline',
        steps: [
          { id: 'fetch', config: { systemId: 'shop', url: '/source' } },
          {
            id: 'send',
            config: {
              systemId: 'shop',
              url: '/sink',
              method: 'POST',
              body: { items: '<<(s) => s.fetch.data.items>>' },
            },
          },
        ],
      },
    });
  });

  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  describe('try', () => {
    it("prints each step's data up to --until and the next step's sourceData keys, stores nothing, calls no later step", async () => {
      const runs = await runCount();
      const notifyCalls = target.count('/notify');
      const { code, stdout, stderr } = await runCli(
        ['try', draftFile, '--until', 'orders', '--input', 'since=2024'],
        env,
      );
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(stdout).toContain('step user: ok\n');
      expect(stdout).toContain('step orders: ok\n');
      expect(stdout).toContain('"order": 1');
      expect(stdout).toContain('next step notify receives sourceData with keys: since, user, orders\n');
      expect(stdout).not.toContain('step notify:');
      // The control character a response carried is escaped; the system credential never printed.
      expect(stdout).not.toContain(ESC);
      expect(stdout).toContain('Ada\\u001b[2J');
      expect(stdout).not.toContain(SYSTEM_TOKEN);
      expect(stdout).not.toContain(TEST_ADMIN_KEY);
      expect(target.count('/notify')).toBe(notifyCalls);
      expect(await runCount()).toBe(runs);
    });

    it('prints the answer with the sourceData values with --output json, and stores the run with --record', async () => {
      const { code, stdout } = await runCli(
        ['try', draftFile, '--until', 'user', '--record', '--output', 'json'],
        env,
      );
      expect(code).toBe(0);
      const run = JSON.parse(stdout) as RunRecord;
      expect(run.until).toMatchObject({
        stepId: 'user',
        nextStepId: 'orders',
        sourceDataKeys: ['user'],
        sourceData: { user: { data: { auth: 'Bearer <<shop_bearerToken>>' } } },
      });
      expect(run.requestSource).toBe('cli');
      expect((await api.call<RunRecord>('GET', `/v1/runs/${run.runId}`)).status).toBe(200);
    });

    it('runs the whole definition without --until and prints its output', async () => {
      const { code, stdout } = await runCli(['try', draftFile], env);
      expect(code).toBe(0);
      expect(stdout).toContain('step notify: ok\n');
      expect(stdout).toMatch(/output:\n\{\n {2}"sent": true\n\}\n$/);
    });

    it('exits 1 naming the step ids when --until names no step of the definition', async () => {
      const { code, stdout, stderr } = await runCli(['try', draftFile, '--until', 'order'], env);
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toContain("no step 'order' in the definition; its steps are 'user', 'orders', 'notify'");
      expect(stderr).toContain('KG_ERR_VALIDATION');
    });

    it('reads a Tool resource in YAML, as kubectl apply takes it, with metadata.name as its id', async () => {
      const file = join(scratch, 'draft.yaml');
      const steps = DRAFT.steps
        .slice(0, 2)
        .map((step) => `    - id: ${step.id}\n      config: {systemId: shop, url: ${step.config.url}}`);
      await writeFile(
        file,
        [
          `apiVersion: ${API_VERSION}`,
          'kind: Tool',
          'metadata:',
          '  name: cli-draft-yaml',
          'spec:',
          '  steps:',
        ]
          .concat(steps)
          .join('\n'),
      );
      const { code, stdout, stderr } = await runCli(['try', file, '--until', 'user'], env);
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(stdout).toContain('step user: ok\n');
      expect(stdout).toContain('next step orders receives sourceData with keys: user\n');
    });

    it('exits 2 without calling the API when the file is not a tool definition', async () => {
      const file = join(scratch, 'not-a-tool.json');
      await writeFile(file, JSON.stringify({ steps: 'none' }));
      const { code, stderr } = await runCli(['try', file], env);
      expect(code).toBe(2);
      expect(stderr).toContain('is not a tool definition');
    });
  });

  describe('runs resume', () => {
    it('resumes a failed run at its failed step, reusing the step before it, and prints the output', async () => {
      sinkStatus = 400;
      const failed = await api.call<RunRecord>('POST', '/v1/tools/cli-pipeline/run', { body: {} });
      expect(failed.body.status).toBe('failed');
      const sourceCalls = target.count('/source');
      sinkStatus = 200;

      const { code, stdout, stderr } = await runCli(
        ['runs', 'resume', failed.body.runId, '--output', 'json'],
        env,
      );
      expect(stderr).toBe('');
      expect(code).toBe(0);
      const run = JSON.parse(stdout) as RunRecord;
      expect(run).toMatchObject({ status: 'success', resumedFrom: failed.body.runId, data: { stored: 2 } });
      expect(run.stepResults?.map((s) => [s.stepId, s.reusedFrom])).toEqual([
        ['fetch', failed.body.runId],
        ['send', undefined],
      ]);
      expect(target.count('/source')).toBe(sourceCalls);
    });

    it('starts the resumed run in the background with --async and new inputs', async () => {
      sinkStatus = 400;
      const failed = await api.call<RunRecord>('POST', '/v1/tools/cli-pipeline/run', {
        body: { inputs: { tag: 'a' } },
      });
      sinkStatus = 200;
      const { code, stdout } = await runCli(
        ['runs', 'resume', failed.body.runId, '--async', '--input', 'tag=b'],
        env,
      );
      expect(code).toBe(0);
      const runId = /^Run (\S+) resumes run /.exec(stdout)?.[1] ?? '';
      expect(stdout).toContain(`Follow it: kubeglue logs ${runId} --follow`);
      const ended = await waitForRun<RunRecord & { toolPayload?: unknown }>(api, runId);
      expect(ended).toMatchObject({
        status: 'success',
        resumedFrom: failed.body.runId,
        toolPayload: { tag: 'b' },
      });
    });

    it.each([
      ['synchronous', []],
      ['background', ['--async']],
    ])('shows the steps a %s resumed run executes with --follow, then its output', async (_, async) => {
      sinkStatus = 400;
      const failed = await api.call<RunRecord>('POST', '/v1/tools/cli-pipeline/run', { body: {} });
      sinkStatus = 200;
      const { code, stdout, stderr } = await runCli(
        ['runs', 'resume', failed.body.runId, '--follow', ...async],
        env,
      );
      expect(stderr).toBe('');
      expect(code).toBe(0);
      const lines = stdout.trimEnd().split('\n');
      // Only the step it executes: the reused one is not run again.
      expect(lines).toContain("Step 'send' started");
      expect(lines).not.toContain("Step 'fetch' started");
      expect(lines.some((line) => /^Step 'send' succeeded in \d+ ms$/.test(line))).toBe(true);
      expect(JSON.parse(lines.slice(lines.indexOf('{')).join('\n'))).toEqual({ stored: 2 });
    });

    it('exits 1 with the refusal when the run succeeded', async () => {
      sinkStatus = 200;
      const ok = await api.call<RunRecord>('POST', '/v1/tools/cli-pipeline/run', { body: {} });
      const { code, stderr } = await runCli(['runs', 'resume', ok.body.runId], env);
      expect(code).toBe(1);
      expect(stderr).toContain('KG_ERR_RUN_NOT_RESUMABLE');
    });

    it('has its own help', async () => {
      const { code, stdout } = await runCli(['runs', 'resume', '--help'], env);
      expect(code).toBe(0);
      expect(stdout).toMatch(/^usage: kubeglue runs resume <runId> \[options\]/);
    });
  });
});
