/**
 * Persistent tool state on the runner Pod path: the internal API's order carries the tool's stored state
 * (or the run's fixture), the real runner process runs the engine and puts the keys it changed with its
 * result, and the internal API commits them with the terminal write, on SQLite and Postgres.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../contract/json.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';
import { type InternalApiHarness, useInternalApi } from '../../support/internal-api.ts';
import { startRunnerProcess } from '../../support/runner-process.ts';
import { DRIVERS } from '../../support/store.ts';

let target: HttpTarget;
let dir: string;
let held: ServerResponse[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubeglue-runner-state-'));
  target = await startHttpTarget();
  target.route('GET', '/page', (req) => ({
    body: { next: `after-${req.query.find(([name]) => name === 'cursor')?.[1] ?? 'start'}` },
  }));
  held = target.hold('/held');
});

afterAll(async () => {
  await target?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Reads the saved cursor, fetches the page after it, saves the next cursor; then, optionally, waits. */
function syncTool(id: string, wait = false): JsonObject {
  return {
    id,
    steps: [
      {
        id: 'fetch',
        config: {
          url: `${target.url}/page`,
          queryParams: { cursor: '<<(sourceData) => sourceData.persistedState.cursor ?? null>>' },
        },
      },
      {
        id: 'keep',
        config: {
          type: 'transform',
          transformCode:
            '(s) => { s.persistedState.cursor = s.fetch.data.next; s.persistedState.runs = (s.persistedState.runs || 0) + 1; return s.fetch.data; }',
        },
      },
      ...(wait ? [{ id: 'wait', config: { url: `${target.url}/held` } }] : []),
    ],
  };
}

describe.each(DRIVERS)('runner pods with tool state on %s', (driver) => {
  const { store, api } = useInternalApi(driver);

  async function runInPod(
    runId: string,
    tool: JsonObject,
    opts: Parameters<InternalApiHarness['startRun']>[2] = {},
  ) {
    const token = await api.startRun(runId, tool, opts);
    return startRunnerProcess({ url: api.url, runId, token, dir }).exited;
  }

  it('the order carries the stored state; the result commits what the run changed', async () => {
    await store.toolState.update('pod-sync', () => ({ cursor: 'c1', runs: 3 }));
    const { code } = await runInPod(`pod-sync-${driver}`, syncTool('pod-sync'));
    expect(code).toBe(0);
    expect(await store.toolState.get('pod-sync')).toMatchObject({
      state: { cursor: 'after-c1', runs: 4 },
      version: 2,
    });
    const run = await store.getRun(`pod-sync-${driver}`);
    expect(run).toMatchObject({ status: 'success', state: { versionRead: 1, versionWritten: 2 } });
    expect(run?.warnings).toBeUndefined();
  });

  it('a key changed while the pod ran is not overwritten, and the run says so', async () => {
    await store.toolState.update('pod-cas', () => ({ cursor: 'c1' }));
    const runId = `pod-cas-${driver}`;
    const before = held.length;
    const running = runInPod(runId, syncTool('pod-cas', true));
    for (let waited = 0; held.length === before; waited += 20) {
      if (waited > 15_000) throw new Error('the runner never reached the target');
      await sleep(20);
    }
    // Someone resets the cursor while the run waits (sg tool state set).
    await store.toolState.update('pod-cas', () => ({ cursor: 'reset' }));
    held[held.length - 1]?.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    expect((await running).code).toBe(0);
    const run = await store.getRun(runId);
    expect(run?.warnings).toEqual([
      "persistedState key 'cursor' not saved: another run (or a change through /v1/tools/{id}/state) changed it after this run read the state",
    ]);
    expect((await store.toolState.get('pod-cas')).state).toEqual({ cursor: 'reset', runs: 1 });
  });

  it('a run seeded with a fixture reads it and saves nothing; a failed run saves nothing', async () => {
    const seeded = await runInPod(`pod-fixture-${driver}`, syncTool('pod-fixture'), {
      state: { fixture: { cursor: 'seed' } },
    });
    expect(seeded.code).toBe(0);
    expect(target.requests.some((request) => request.url === '/page?cursor=seed')).toBe(true);
    expect(await store.toolState.get('pod-fixture')).toMatchObject({ version: 0 });
    expect((await store.getRun(`pod-fixture-${driver}`))?.state).toEqual({ fixture: { cursor: 'seed' } });

    const broken = {
      ...syncTool('pod-failed'),
      steps: [
        ...(syncTool('pod-failed').steps as JsonObject[]),
        { id: 'boom', config: { url: `${target.url}/missing` } },
      ],
    };
    const failed = await runInPod(`pod-failed-${driver}`, broken);
    expect(failed.code).toBe(1);
    expect(await store.toolState.get('pod-failed')).toMatchObject({ state: {}, version: 0 });
    expect((await store.getRun(`pod-failed-${driver}`))?.state).toEqual({ versionRead: 0 });
  });
});
