/**
 * Every role writes one JSON object per line (contract/log.ts), on stdout and stderr alike, from its
 * first line (a warning about a misspelt setting) to its last (stopped, or the fatal error that ends
 * it): each role is started as a process, as a Deployment or a Pod starts it, and each line it prints is
 * parsed as JSON.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { LOG_LEVELS } from '../../../contract/log.ts';
import { KUBEGLUE_BIN as CLI } from '../../support/cli.ts';
import { callApi, readyUrl, TEST_ADMIN_KEY, TEST_MASTER_KEY } from '../../support/embedded.ts';
import { useTempDir } from '../../support/fixture.ts';
import { startAgent } from '../../support/gateway-agent.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { startKubeglue } from '../../support/kube/kubeglue.ts';
import { type LogLine, logLines } from '../../support/log-lines.ts';
import { startRunnerProcess } from '../../support/runner-process.ts';

const target = useHttpTarget();
const dir = useTempDir('kubeglue-role-logs-');

/** Every line a JSON log line of the role (fastify's request log in the API's roles has no role). */
function expectJsonLines(output: string, role: string): LogLine[] {
  const lines = logLines(output);
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) {
    expect(line, JSON.stringify(line)).toMatchObject({
      level: expect.any(Number),
      time: expect.any(Number),
      pid: expect.any(Number),
      msg: expect.any(String),
    });
    if (line.role !== undefined) expect(line.role).toBe(role);
  }
  return lines;
}

const at = (lines: LogLine[], level: keyof typeof LOG_LEVELS) =>
  lines.filter((line) => line.level === LOG_LEVELS[level]).map((line) => line.msg);

describe('the log of every role', () => {
  it('embedded: a settings warning, the ready line, request logs, a run through a worker, stopped', async () => {
    target.route('GET', '/packed', {
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify({ packed: true })),
    });
    const process = startKubeglue('embedded', {
      KUBEGLUE_PORT: '0',
      KUBEGLUE_DATA_DIR: dir.path,
      KUBEGLUE_ADMIN_KEY: TEST_ADMIN_KEY,
      KUBEGLUE_MASTER_KEY: TEST_MASTER_KEY,
      KUBEGLUE_WORKERS: '1',
      KUBEGLUE_LOG_LEVEL: 'info',
      KUBEGLUE_EGRESS_PRIVATE: 'allow',
      KUBEGLUE_SANDBOX_MEMROY_MB: '64',
    });
    const { url } = await readyUrl(process.child);
    const created = await callApi(url, TEST_ADMIN_KEY, 'POST', '/v1/tools', {
      id: 'packed',
      steps: [{ id: 'get', config: { url: `${target.url}/packed` } }],
    });
    expect(created.status).toBe(201);
    const run = await callApi<{ status: string; data: unknown }>(
      url,
      TEST_ADMIN_KEY,
      'POST',
      '/v1/tools/packed/run',
      {},
    );
    expect(run.body).toMatchObject({ status: 'success', data: { packed: true } });
    await process.stop();
    const lines = expectJsonLines(process.output(), 'embedded');
    expect(at(lines, 'warn')).toContain(
      'KUBEGLUE_SANDBOX_MEMROY_MB is not a kubeglue setting (did you mean KUBEGLUE_SANDBOX_MEMORY_MB?); it is ignored',
    );
    expect(at(lines, 'info').some((msg) => msg.startsWith('ready on http://'))).toBe(true);
    expect(at(lines, 'info')).toContain('stopped');
    // The engine worker made a compressed request: no warning of undici's reached the log.
    expect(process.output()).not.toContain('ExperimentalWarning');
  }, 60_000);

  it('api: the fatal error of a missing setting', async () => {
    const process = startKubeglue('api', { KUBEGLUE_MASTER_KEY: TEST_MASTER_KEY });
    expect(await process.exited).toBe(1);
    const lines = expectJsonLines(process.output(), 'api');
    expect(at(lines, 'fatal').join('\n')).toContain('KUBEGLUE_DATABASE_URL');
  });

  it('operator: an unknown argument, and an invalid setting, each a fatal line', async () => {
    const argument = await new Promise<{ code: number; stderr: string; stdout: string }>((resolve) =>
      execFile(
        process.execPath,
        ['--no-node-snapshot', CLI, 'operator', 'now'],
        { env: {} },
        (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stdout, stderr }),
      ),
    );
    expect(argument.code).toBe(2);
    expect(at(expectJsonLines(argument.stdout + argument.stderr, 'operator'), 'fatal')[0]).toContain(
      "unknown argument 'now'",
    );
    const invalid = startKubeglue('operator', { KUBEGLUE_LEASE_DURATION_MS: 'soon' });
    expect(await invalid.exited).toBe(1);
    expect(at(expectJsonLines(invalid.output(), 'operator'), 'fatal')[0]).toMatch(
      /^invalid configuration: KUBEGLUE_LEASE_DURATION_MS: /,
    );
  });

  it('runner: a runner Pod that gets no order logs each step as JSON and ends with a JSON line', async () => {
    // The internal API answers 404 for the order: the run is unknown.
    const runner = startRunnerProcess({ url: target.url, runId: 'gone-1', token: 'kgr_x', dir: dir.path });
    const { code, output } = await runner.exited;
    expect(code).toBe(1);
    const lines = expectJsonLines(output, 'runner');
    expect(lines.some((line) => line.msg.includes('no run order'))).toBe(true);
  });

  it('runner: an invalid run order is an error line', async () => {
    const file = join(dir.path, 'invalid.json');
    await writeFile(file, JSON.stringify({ runId: 'x' }));
    const result = await new Promise<{ code: number; output: string }>((resolve) =>
      execFile(
        process.execPath,
        ['--no-node-snapshot', CLI, 'runner', '--order', file],
        (error, stdout, stderr) =>
          resolve({ code: error ? (error.code as number) : 0, output: stdout + stderr }),
      ),
    );
    expect(result.code).toBe(1);
    expect(at(expectJsonLines(result.output, 'runner'), 'error')[0]).toMatch(/^invalid run order: /);
  });

  it('agent: its start, debug lines and stop; a bad configuration is a fatal line', async () => {
    const agent = await startAgent({
      tunnel_id: 'logs',
      // Nothing listens there: the agent keeps trying (debug lines) until it is stopped.
      server_url: 'ws://127.0.0.1:9',
      api_key: 'kg_agent-key-that-is-never-accepted',
      targets: { echo: '127.0.0.1:9' },
    });
    // Its first connection attempt (a debug line): by then it has its signal handlers.
    await agent.waitFor('connecting to ws://127.0.0.1:9');
    expect(await agent.kill()).toBe(0);
    const lines = expectJsonLines(agent.output(), 'agent');
    expect(at(lines, 'info').some((msg) => msg.startsWith("tunnel 'logs' → ws://127.0.0.1:9"))).toBe(true);
    expect(at(lines, 'debug').some((msg) => msg.includes('connecting to ws://127.0.0.1:9'))).toBe(true);
    expect(at(lines, 'info')).toContain('stopped');

    const broken = await startAgent({ server_url: 'http://example.com', api_key: 'k', targets: {} });
    expect(await broken.exited).toBe(2);
    expect(at(expectJsonLines(broken.output(), 'agent'), 'fatal')[0]).toContain('server_url');
  });
});
