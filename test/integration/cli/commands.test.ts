/**
 * The client commands of `kubeglue` as a user runs them: the real CLI process against a started embedded
 * API whose tools call a real HTTP target. Output is read as a script reads it (stdout and stderr are
 * pipes), exit codes as a shell sees them.
 */
import { execFile, spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KG_ERR_RUN_NOT_FOUND, KG_ERR_TOOL_NOT_FOUND } from '../../../contract/api/errors.ts';
import { KUBEGLUE_BIN, runCli, startCli } from '../../support/cli.ts';
import { TEST_ADMIN_KEY, useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const ESC = '\x1b';
const HAS_SCRIPT = spawnSync('script', ['--version']).status === 0;
const SYSTEM_TOKEN = 'cli-system-token-never-printed-7e21';

interface RunRecord {
  runId: string;
  toolId: string;
  status: string;
  requestSource?: string;
  data?: unknown;
  error?: string;
  stepResults?: Array<{ stepId: string; success: boolean }>;
}

describe('the kubeglue client commands', () => {
  const api = useTestApi();
  const target = useHttpTarget();
  let held: ReturnType<typeof target.hold>;
  let scratch: string;
  /** The environment of a user who set the API and key as docs/cli.md says. */
  let env: Record<string, string>;

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'kubeglue-cli-'));
    env = { KUBEGLUE_URL: api.url, KUBEGLUE_API_KEY: TEST_ADMIN_KEY };
    target.route('GET', '/todos', {
      body: [
        { title: 'write the report', done: false },
        { title: 'fix the bike', done: false },
      ],
    });
    target.route('GET', '/broken', { status: 500, body: { error: 'the warehouse is closed' } });
    target.route('GET', '/items', (req) => {
      const page = Number(new URLSearchParams(req.url.split('?')[1]).get('page'));
      return { delayMs: 100, body: page <= 3 ? [{ page }, { page }] : [] };
    });
    held = target.hold('/held');
    await api.call('POST', '/v1/systems', {
      body: { id: 'shop', url: target.url, authType: 'bearer', credentials: { bearerToken: SYSTEM_TOKEN } },
    });
    const tools = [
      {
        id: 'open-todos',
        instruction: 'The titles of the open todos',
        steps: [{ id: 'todos', config: { systemId: 'shop', url: '/todos' } }],
        outputTransform: '(sourceData) => sourceData.todos.data.map((todo) => todo.title)',
      },
      {
        // An id with spaces: the commands put it in request paths, percent-encoded.
        id: 'Open Todos',
        steps: [{ id: 'todos', config: { systemId: 'shop', url: '/todos' } }],
        outputTransform: '(sourceData) => sourceData.todos.data.length',
      },
      {
        id: 'echo-inputs',
        steps: [{ id: 'todos', config: { systemId: 'shop', url: '/todos' } }],
        outputTransform:
          '(sourceData) => ({ count: sourceData.count, flag: sourceData.flag, name: sourceData.name, ' +
          'zip: sourceData.zip, tags: sourceData.tags, fromFile: sourceData.fromFile })',
      },
      { id: 'broken', steps: [{ id: 'fetch', config: { systemId: 'shop', url: '/broken' } }] },
      {
        id: 'paged',
        steps: [
          {
            id: 'items',
            config: {
              systemId: 'shop',
              url: '/items',
              queryParams: { page: '<<page>>' },
              pagination: { type: 'pageBased', pageSize: 2 },
            },
          },
        ],
        outputTransform: '(sourceData) => ({ items: sourceData.items.data.length })',
      },
      { id: 'waiting', steps: [{ id: 'wait', config: { systemId: 'shop', url: '/held' } }] },
      {
        id: 'retired',
        archived: true,
        steps: [{ id: 'todos', config: { systemId: 'shop', url: '/todos' } }],
      },
    ];
    for (const tool of tools) expect((await api.call('POST', '/v1/tools', { body: tool })).status).toBe(201);
  });

  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  const record = async (runId: string) => (await api.call<RunRecord>('GET', `/v1/runs/${runId}`)).body;

  describe('run', () => {
    it('runs a tool synchronously, prints its output and exits 0', async () => {
      const { code, stdout, stderr } = await runCli(['run', 'open-todos'], env);
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(JSON.parse(stdout)).toEqual(['write the report', 'fix the bike']);
    });

    it('prints the run record with --output json; the run carries requestSource cli', async () => {
      const { code, stdout } = await runCli(['run', 'open-todos', '--output', 'json'], env);
      expect(code).toBe(0);
      const run = JSON.parse(stdout) as RunRecord;
      expect(run).toMatchObject({ toolId: 'open-todos', status: 'success', requestSource: 'cli' });
      expect(run.data).toEqual(['write the report', 'fix the bike']);
      expect(run.stepResults?.[0]).toMatchObject({ stepId: 'todos', success: true });
      expect(await record(run.runId)).toMatchObject({ status: 'success', requestSource: 'cli' });
    });

    it('types --input values as JSON when they parse, as text otherwise; --input wins over --inputs-file', async () => {
      const file = join(scratch, 'inputs.json');
      await writeFile(file, JSON.stringify({ fromFile: { nested: [1, 2] }, name: 'from the file' }));
      const { code, stdout } = await runCli(
        [
          'run',
          'echo-inputs',
          '--inputs-file',
          file,
          '--input',
          'count=3',
          '--input',
          'flag=true',
          '--input',
          'name=alice',
          '--input',
          'zip="01234"',
          '--input',
          'tags=["a","b"]',
        ],
        env,
      );
      expect(code).toBe(0);
      expect(JSON.parse(stdout)).toEqual({
        count: 3,
        flag: true,
        name: 'alice',
        zip: '01234',
        tags: ['a', 'b'],
        fromFile: { nested: [1, 2] },
      });
    });

    it("exits 1 with the run's error when the tool fails, and never prints a credential", async () => {
      const { code, stdout, stderr } = await runCli(['run', 'broken'], env);
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toMatch(/^kubeglue run: run \S+ failed: .*HTTP 500.*the warehouse is closed/);
      expect(stderr + stdout).not.toContain(SYSTEM_TOKEN);
      expect(stderr + stdout).not.toContain(TEST_ADMIN_KEY);
    });

    it('runs a tool whose id holds spaces, and lists its schedules', async () => {
      const ran = await runCli(['run', 'Open Todos'], env);
      expect(ran.stderr).toBe('');
      expect(ran.code).toBe(0);
      expect(JSON.parse(ran.stdout)).toBe(2);
      const schedules = await runCli(['schedules', '--tool', 'Open Todos'], env);
      expect(schedules).toMatchObject({ code: 0, stdout: 'No schedules.\n' });
    });

    it("exits 1 with the API's error message for a tool that does not exist", async () => {
      const { code, stderr } = await runCli(['run', 'no-such-tool'], env);
      expect(code).toBe(1);
      expect(stderr).toBe(
        `kubeglue run: Tool 'no-such-tool' not found (KG_ERR_TOOL_NOT_FOUND)\n${KG_ERR_TOOL_NOT_FOUND('no-such-tool').hint}\n`,
      );
    });

    it.each([
      [
        'an unknown option',
        ['run', 'open-todos', '--inptu', 'a=1'],
        "unknown option '--inptu' (did you mean '--input'?)",
      ],
      ['an --input without =', ['run', 'open-todos', '--input', 'count'], "--input 'count': give key=value"],
      [
        'an --input key given twice',
        ['run', 'open-todos', '--input', 'a=1', '--input', 'a=2'],
        'given twice',
      ],
      ['no tool id', ['run'], 'missing <toolId>'],
      ['an unknown --output', ['run', 'open-todos', '--output', 'yaml'], '--output must be text or json'],
      ['an unknown --status', ['runs', '--status', 'done'], '--status must be one of running, success'],
      ['a --limit that is no number', ['runs', '--limit', 'many'], '--limit must be a whole number'],
      ['an unknown command', ['rnu'], "unknown role or command 'rnu' (did you mean 'run'?)"],
    ])('exits 2 on %s, without calling the API', async (_what, args, message) => {
      const before = target.count('/todos');
      const { code, stdout, stderr } = await runCli(args, env);
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toContain(message);
      expect(target.count('/todos')).toBe(before);
    });

    it('exits 2 when --inputs-file does not hold a JSON object', async () => {
      const file = join(scratch, 'array.json');
      await writeFile(file, '[1, 2]');
      const { code, stderr } = await runCli(['run', 'open-todos', '--inputs-file', file], env);
      expect(code).toBe(2);
      expect(stderr).toContain(`--inputs-file ${file} must hold a JSON object, not an array`);
      const missing = await runCli(['run', 'open-todos', '--inputs-file', join(scratch, 'none.json')], env);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain('ENOENT');
    });

    it('starts an async run with --async and prints its id; the run carries requestSource cli', async () => {
      const { code, stdout } = await runCli(['run', 'open-todos', '--async'], env);
      expect(code).toBe(0);
      const runId = /^Run (\S+) of tool 'open-todos' started\.$/m.exec(stdout)?.[1] as string;
      expect(stdout).toContain(`kubeglue logs ${runId} --follow`);
      expect(await waitForRun(api, runId)).toMatchObject({ status: 'success', requestSource: 'cli' });
    });

    it('streams the steps and pages of an async run with --follow and ends with its result', async () => {
      const { code, stdout } = await runCli(['run', 'paged', '--async', '--follow'], env);
      expect(code).toBe(0);
      const lines = stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^Run \S+ of tool 'paged' started$/);
      expect(lines).toContain("Step 'items' started");
      expect(lines).toContain("Step 'items': page 2 fetched, 4 item(s) so far");
      expect(lines.some((line) => /^Step 'items' succeeded in \d+ ms$/.test(line))).toBe(true);
      expect(lines.some((line) => /^Run \S+ succeeded in \d+ ms$/.test(line))).toBe(true);
      // The result comes last, after every event.
      expect(JSON.parse(lines.slice(lines.indexOf('{')).join('\n'))).toEqual({ items: 6 });
      // Piped: plain lines, no progress line rewriting itself.
      expect(stdout).not.toContain('\r');
      expect(stdout).not.toContain(ESC);
    });

    it('streams the steps of a synchronous run with --follow, then prints its output', async () => {
      const { code, stdout } = await runCli(['run', 'paged', '--follow'], env);
      expect(code).toBe(0);
      const lines = stdout.trimEnd().split('\n');
      expect(lines.indexOf("Step 'items' started")).toBeGreaterThan(0);
      expect(lines.indexOf("Step 'items': page 3 fetched, 6 item(s) so far")).toBeGreaterThan(
        lines.indexOf("Step 'items': page 1 fetched, 2 item(s) so far"),
      );
      expect(JSON.parse(lines.slice(lines.indexOf('{')).join('\n'))).toEqual({ items: 6 });
      expect(stdout).not.toContain('\r');
      expect(stdout).not.toContain(ESC);
    });

    it('keeps stdout to one JSON document with --output json --follow (the events go to stderr)', async () => {
      const { code, stdout, stderr } = await runCli(
        ['run', 'paged', '--async', '--follow', '--output', 'json'],
        env,
      );
      expect(code).toBe(0);
      const run = JSON.parse(stdout) as RunRecord;
      expect(run).toMatchObject({
        toolId: 'paged',
        status: 'success',
        requestSource: 'cli',
        data: { items: 6 },
      });
      expect(stderr).toContain("Step 'items': page 1 fetched");
    });

    // `script` (util-linux) gives the CLI a real pseudo-terminal as stdout.
    it.skipIf(!HAS_SCRIPT)('draws a progress line that rewrites itself on a terminal', async () => {
      const command = `'${process.execPath}' --no-node-snapshot '${KUBEGLUE_BIN}' run paged --follow`;
      // Not spawnSync: the API runs in this process and must keep answering.
      const { stdout } = await promisify(execFile)('script', ['-qec', command, '/dev/null'], {
        env: { ...process.env, ...env, HOME: scratch, XDG_CONFIG_HOME: scratch },
        timeout: 20_000,
      });
      // The page lines overwrite each other in place; the finished step stays as a line.
      const clear = `\r${ESC}[2K`;
      expect(stdout).toContain(`${clear}… Step 'items': page 1 fetched, 2 item(s) so far (`);
      expect(stdout).toContain(`${clear}Step 'items' succeeded in `);
      expect(stdout).toMatch(/Step 'items' succeeded in \d+ ms\r?\n/);
    });
  });

  describe('logs', () => {
    it('follows a running run until it ends, and exits 0 when it succeeded', async () => {
      const started = await api.call<RunRecord>('POST', '/v1/tools/waiting/run', {
        body: { options: { async: true } },
      });
      const { runId } = started.body;
      const cli = startCli(['logs', runId, '--follow'], env);
      await cli.printed(/^Step 'wait' started$/m);
      expect(cli.stdout()).not.toContain('succeeded');
      const request = held.shift();
      request?.writeHead(200, { 'content-type': 'application/json' }).end('{"done":true}');
      const { code, stdout } = await cli.exited;
      expect(code).toBe(0);
      expect(stdout).toMatch(new RegExp(`^Run ${runId} succeeded in \\d+ ms$`, 'm'));
    });

    it("prints a finished run's steps from its record and exits 1 when it failed", async () => {
      const failed = await runCli(['run', 'broken', '--output', 'json'], env);
      const { runId } = JSON.parse(failed.stdout) as RunRecord;
      const { code, stdout } = await runCli(['logs', runId], env);
      expect(code).toBe(1);
      const lines = stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(new RegExp(`^Run ${runId} of tool 'broken' started at \\S+ \\(cli\\)$`));
      expect(lines[1]).toMatch(/^Step 'fetch' failed: .*HTTP 500/);
      expect(lines[2]).toMatch(new RegExp(`^Run ${runId} failed in \\S+ m?s: `));
    });

    it("exits 1 with the API's message and what to do for a run that does not exist", async () => {
      const { code, stderr } = await runCli(['logs', 'no-such-run', '--follow'], env);
      expect(code).toBe(1);
      expect(stderr).toContain('kubeglue logs: ');
      expect(stderr).toContain('KG_ERR_RUN_NOT_FOUND');
      expect(stderr).toContain(KG_ERR_RUN_NOT_FOUND('no-such-run').hint as string);
    });

    it('asks for a run id holding "/" as that id, not as a longer path', async () => {
      const { code, stderr } = await runCli(['logs', 'no/such-run'], env);
      expect(code).toBe(1);
      expect(stderr).toBe(
        `kubeglue logs: Run 'no/such-run' not found (KG_ERR_RUN_NOT_FOUND)\n${KG_ERR_RUN_NOT_FOUND('no/such-run').hint}\n`,
      );
    });
  });

  describe('runs and tools', () => {
    it('lists runs filtered by tool and status', async () => {
      await runCli(['run', 'broken'], env);
      const { code, stdout } = await runCli(
        ['runs', '--tool', 'broken', '--status', 'failed', '--output', 'json'],
        env,
      );
      expect(code).toBe(0);
      const runs = JSON.parse(stdout) as RunRecord[];
      expect(runs.length).toBeGreaterThan(0);
      expect(runs.every((run) => run.toolId === 'broken' && run.status === 'failed')).toBe(true);

      const table = await runCli(['runs', '--tool', 'open-todos', '--limit', '2'], env);
      const lines = table.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^RUN +TOOL +STATUS +SOURCE +STARTED +DURATION$/);
      expect(lines).toHaveLength(3);
      expect(lines[1]).toMatch(/^\S+ +open-todos +success +cli +\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ +\d/);
      // More runs of the tool than listed: stderr says how many match, the table stays as it is.
      expect(table.stderr).toMatch(/^2 of \d+ matching runs; --limit lists more\.$/m);

      const none = await runCli(['runs', '--tool', 'waiting', '--status', 'aborted'], env);
      expect(none.stdout).toBe('No runs.\n');
    });

    it('lists tools with their step counts and instructions; archived ones with --archived', async () => {
      const { code, stdout } = await runCli(['tools'], env);
      expect(code).toBe(0);
      expect(stdout).toMatch(/^TOOL +STEPS +UPDATED +INSTRUCTION$/m);
      expect(stdout).toMatch(/^open-todos +1 +\S+ \S+ +The titles of the open todos$/m);
      const json = await runCli(['tools', '--output', 'json'], env);
      expect((JSON.parse(json.stdout) as Array<{ id: string }>).map((tool) => tool.id).sort()).toEqual([
        'Open Todos',
        'broken',
        'echo-inputs',
        'open-todos',
        'paged',
        'waiting',
      ]);
      const archived = await runCli(['tools', '--archived'], env);
      expect(archived.stdout).toMatch(/^retired \(archived\) +1 /m);
    });
  });

  describe('where the API and the key come from', () => {
    async function configFile(content: object, mode: number): Promise<string> {
      const dir = await mkdtemp(join(scratch, 'xdg-'));
      await mkdir(join(dir, 'kubeglue'));
      const path = join(dir, 'kubeglue', 'config.json');
      await writeFile(path, JSON.stringify(content));
      await chmod(path, mode);
      return dir;
    }

    it('reads the URL and key from the config file under XDG_CONFIG_HOME', async () => {
      const xdg = await configFile({ url: api.url, apiKey: TEST_ADMIN_KEY }, 0o600);
      const { code, stdout } = await runCli(['tools'], { XDG_CONFIG_HOME: xdg });
      expect(code).toBe(0);
      expect(stdout).toContain('open-todos');
    });

    it('reads the file KUBEGLUE_CLI_CONFIG names; a variable that is set wins over the file', async () => {
      const xdg = await configFile(
        { url: 'http://127.0.0.1:9', apiKey: 'kg_not-this-one-0123456789abcdef' },
        0o600,
      );
      const path = join(xdg, 'kubeglue', 'config.json');
      const { code } = await runCli(['tools'], {
        KUBEGLUE_CLI_CONFIG: path,
        KUBEGLUE_URL: api.url,
        KUBEGLUE_API_KEY: TEST_ADMIN_KEY,
      });
      expect(code).toBe(0);
    });

    it('refuses a config file holding a key that other users may read', async () => {
      const xdg = await configFile({ url: api.url, apiKey: TEST_ADMIN_KEY }, 0o644);
      const { code, stdout, stderr } = await runCli(['tools'], { XDG_CONFIG_HOME: xdg });
      expect(code).toBe(2);
      expect(stderr).toContain('holds an API key and other users may read or write it (mode 0644)');
      expect(stderr).toContain('chmod 600');
      expect(stdout + stderr).not.toContain(TEST_ADMIN_KEY);
    });

    it('says what is missing without a key, and exits 2', async () => {
      const { code, stderr } = await runCli(['tools'], { KUBEGLUE_URL: api.url });
      expect(code).toBe(2);
      expect(stderr).toContain('no API key: set KUBEGLUE_API_KEY, or apiKey in the config file');
    });

    it("prints the API's message for a refused key, never the key", async () => {
      const wrong = 'kg_wrong-key-0123456789abcdefghijklmnop';
      const { code, stdout, stderr } = await runCli(['tools'], {
        KUBEGLUE_URL: api.url,
        KUBEGLUE_API_KEY: wrong,
      });
      expect(code).toBe(1);
      expect(stderr).toMatch(/^kubeglue tools: .*\(KG_ERR_INVALID_API_KEY\)\n[^\n]+\n$/);
      expect(stdout + stderr).not.toContain(wrong);
    });

    it('exits 1 saying it cannot reach an API that is not there', async () => {
      const { code, stderr } = await runCli(['tools'], {
        KUBEGLUE_URL: 'http://127.0.0.1:9',
        KUBEGLUE_API_KEY: 'kg_x',
      });
      expect(code).toBe(1);
      expect(stderr).toContain('cannot reach the kubeglue API at http://127.0.0.1:9');
    });
  });
});
