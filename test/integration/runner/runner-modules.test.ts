/**
 * What a runner Pod loads before its first step (issue 34: Node's start and module loading were most of
 * the runner's second). `kubeglue runner` runs a one-step HTTP tool end to end while a preloaded hook
 * records every module it loads: the role's path must not reach the client commands, the help texts,
 * the API, the operator, the store or Kubernetes, nor libraries only those or a rare step need.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../../store/index.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';
import { createInternalApi, type InternalApiHarness } from '../../support/internal-api.ts';
import { startRunnerProcess } from '../../support/runner-process.ts';
import { openTestStore } from '../../support/store.ts';

const REPO = join(import.meta.dirname, '..', '..', '..');
const TRACE_HOOK = join(REPO, 'test/support/module-trace.ts');

let store: Store;
let closeStore: () => Promise<void>;
let api: InternalApiHarness;
let target: HttpTarget;
let dir: string;

beforeAll(async () => {
  ({ store, close: closeStore } = await openTestStore('sqlite'));
  dir = await mkdtemp(join(tmpdir(), 'kubeglue-runner-modules-'));
  target = await startHttpTarget();
  target.route('GET', '/items', { body: [{ id: 1 }] });
  api = createInternalApi(store);
  await api.listen();
});

afterAll(async () => {
  await api?.close();
  await target?.stop();
  await closeStore?.();
  await rm(dir, { recursive: true, force: true });
});

/** The repository files and packages the runner loaded: `runner/main.ts`, `node_modules/undici`. */
async function loadedBy(runId: string): Promise<string[]> {
  const traceFile = join(dir, `${runId}.modules`);
  const token = await api.startRun(runId, {
    id: 'items',
    steps: [{ id: 'fetch', config: { url: `${target.url}/items` } }],
  });
  const { code, summary } = await startRunnerProcess({
    url: api.url,
    runId,
    token,
    dir,
    env: { NODE_OPTIONS: `--import=${TRACE_HOOK}`, MODULE_TRACE_FILE: traceFile },
  }).exited;
  expect(code).toBe(0);
  expect(summary).toMatchObject({ status: 'success', resultStored: true });
  const urls = (await readFile(traceFile, 'utf8')).split('\n').filter((url) => url.startsWith('file:'));
  const names = urls.map((url) => {
    const path = relative(REPO, fileURLToPath(url)).split('\\').join('/');
    return path.match(/^node_modules\/((?:@[^/]+\/)?[^/]+)/)?.[0] ?? path;
  });
  return [...new Set(names)];
}

describe('a runner Pod', () => {
  it('runs an HTTP step without loading the client commands, the api, the operator, the store or Kubernetes', async () => {
    const loaded = await loadedBy('modules-http');
    // The hook saw the role's path (so an empty list cannot pass).
    expect(loaded).toEqual(
      expect.arrayContaining([
        'bin/kubeglue.ts',
        'runner/pod-runner.ts',
        'engine/run-tool.ts',
        'node_modules/undici',
      ]),
    );
    // bin/cli/output.ts is the CLI's printable(), which the entry point uses for its own messages.
    const foreign = loaded.filter((name) =>
      /^(bin\/cli\/(?!output\.ts$)|bin\/help\.ts|api\/|operator\/|store\/|kube\/|runs\/|tools\/|systems\/|schedules\/|platform\/|ui\/)/.test(
        name,
      ),
    );
    expect(foreign).toEqual([]);
    const packages = loaded.filter((name) => name.startsWith('node_modules/'));
    for (const unneeded of [
      'yaml', // the CLI's files
      'mime-types', // file names of downloads and file steps
      'fastify',
      'pg',
      'better-sqlite3',
      '@kubernetes/client-node',
      'ajv',
      'ssh2',
      'basic-ftp',
    ]) {
      expect(packages).not.toContain(`node_modules/${unneeded}`);
    }
  });
});
