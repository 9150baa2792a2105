/**
 * `npm start` runs the compiled JavaScript (`npm run build`: tsconfig.build.json into dist/), not the
 * TypeScript sources: each process is ~20 MiB smaller that way. The build must be complete (no import
 * left pointing at a .ts file), and the server it produces must run steps in engine workers that are
 * compiled too.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, readyUrl, serverProcessEnv, TEST_ADMIN_KEY } from '../../support/embedded.ts';

const REPO = resolve(import.meta.dirname, '../../..');
const run = promisify(execFile);

async function* jsFiles(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* jsFiles(path);
    else if (entry.name.endsWith('.js')) yield path;
  }
}

/** The pids of a process's children (Linux). */
async function childPids(pid: number): Promise<number[]> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  return text.split(/\s+/).filter(Boolean).map(Number);
}

describe('the compiled build (what npm start runs)', () => {
  // Inside the checkout, so the compiled modules resolve node_modules as dist/ does.
  const out = join(REPO, '.tmp', `compiled-${process.pid}`);
  let target: Server;
  let targetUrl: string;
  let dataDir: string;
  let server: ChildProcess | undefined;

  beforeAll(async () => {
    await run(join(REPO, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.build.json', '--outDir', out], {
      cwd: REPO,
    });
    target = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ pong: true }));
    });
    await new Promise<void>((done) => target.listen(0, '127.0.0.1', done));
    const address = target.address();
    if (!address || typeof address === 'string') throw new Error('no target address');
    targetUrl = `http://127.0.0.1:${address.port}`;
    dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-compiled-'));
  }, 120_000);

  afterAll(async () => {
    server?.kill('SIGKILL');
    await new Promise<void>((done) => target?.close(() => done()));
    await rm(out, { recursive: true, force: true });
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('leaves no import of a .ts file in the emitted JavaScript', async () => {
    const offenders: string[] = [];
    let files = 0;
    for await (const file of jsFiles(out)) {
      files++;
      const text = await readFile(file, 'utf8');
      if (/(?:from\s+|import\s*\(\s*)['"][^'"]+\.ts['"]/.test(text)) offenders.push(file);
    }
    expect(files).toBeGreaterThan(50);
    expect(offenders).toEqual([]);
  });

  it('serves a run whose steps execute in a compiled engine worker', async () => {
    const child = spawn(process.execPath, ['--no-node-snapshot', join(out, 'bin/kubeglue.js'), 'embedded'], {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: serverProcessEnv(dataDir, { KUBEGLUE_HOST: '127.0.0.1' }),
    });
    server = child;
    const { url, output } = await readyUrl(child);
    const call = (path: string, body: unknown) =>
      callApi<Record<string, unknown>>(url, TEST_ADMIN_KEY, 'POST', path, body);
    const tool = await call('/v1/tools', {
      id: 'compiled-check',
      steps: [{ id: 'ping', config: { url: `${targetUrl}/ping`, method: 'GET' } }],
      outputTransform: '(sourceData) => ({ pong: sourceData.ping.data.pong, answer: 6 * 7 })',
    });
    expect(tool.status, JSON.stringify(tool.body)).toBe(201);
    const result = await call('/v1/tools/compiled-check/run', {});
    expect(result.status, `${JSON.stringify(result.body)}\n${output()}`).toBe(200);
    expect(result.body).toMatchObject({ status: 'success', data: { pong: true, answer: 42 } });

    const workers = await childPids(child.pid!);
    const commands = await Promise.all(
      workers.map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').then((text) => text.split('\0'))),
    );
    expect(
      commands.some((argv) => argv.some((arg) => arg.endsWith(join('engine', 'worker', 'worker.js')))),
    ).toBe(true);
    expect(commands.flat().some((arg) => arg.endsWith('.ts'))).toBe(false);
    // The worker's first HTTP step leaves the log clean (undici's experimental decompress interceptor).
    expect(output()).not.toMatch(/Warning/);
  }, 120_000);
});
