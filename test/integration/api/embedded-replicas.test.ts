/**
 * Embedded processes sharing one Postgres are replicas of one API (docs/embedded.md): a process that starts
 * beside a live one leaves that one's runs to it (its startup recovery and its operator see that the
 * executor holding them holds its lock), and a living process fails the runs of one killed with -9, since
 * nothing else would end them. The servers are `kubeglue embedded` child processes; their steps call a
 * real HTTP target that holds each request until the test lets go.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { useTestDatabase } from '../../support/database.ts';
import {
  callServer,
  type ServerProcess,
  startServerProcess,
  TEST_ADMIN_KEY,
  testServerEnv,
  waitForServerRun,
} from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const database = useTestDatabase();
const target = useHttpTarget();
/** Requests the target holds, by their `run` query parameter. */
const held = new Map<string, ServerResponse>();
const servers: ServerProcess[] = [];
const dirs: string[] = [];

beforeAll(() => {
  target.route('POST', '/hold', (req, res) => {
    held.set(req.query.find(([name]) => name === 'run')?.[1] ?? '', res);
    return undefined;
  });
});

afterEach(async () => {
  for (const res of held.values()) res.destroy();
  held.clear();
  for (const server of servers.splice(0)) {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await server.exited;
  }
});

afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** `kubeglue embedded` on the shared database, with a data dir of its own. */
async function startReplica(): Promise<ServerProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'kubeglue-replica-'));
  dirs.push(dir);
  const server = await startServerProcess(
    testServerEnv(dir, { KUBEGLUE_HOST: '127.0.0.1', KUBEGLUE_DATABASE_URL: database.url }),
  );
  servers.push(server);
  return server;
}

/** A tool whose one step changes something (so nothing retries it) and waits for the target. */
async function createHoldingTool(server: ServerProcess): Promise<void> {
  // Both tests share the database: the second finds the first's tool.
  const exists = await fetch(`${server.url}/v1/tools/replica-write`, {
    headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
  });
  if (exists.ok) return;
  await callServer(server, 'POST', '/v1/tools', {
    id: 'replica-write',
    steps: [
      {
        id: 'write',
        modify: true,
        config: { url: `${target.url}/hold`, method: 'POST', queryParams: { run: '<<key>>' } },
      },
    ],
  });
}

const startAsync = async (server: ServerProcess, key: string) =>
  (
    await callServer<Run>(server, 'POST', '/v1/tools/replica-write/run', {
      inputs: { key },
      options: { async: true },
    })
  ).runId;

const untilHeld = (...keys: string[]) =>
  expect.poll(() => keys.every((key) => held.has(key)), { timeout: 30_000 }).toBe(true);

function answerHeld(): void {
  for (const res of held.values()) res.end(JSON.stringify({ written: true }));
  held.clear();
}

describe('embedded processes on one Postgres', () => {
  it("leaves a live process's runs to it when another starts beside it", async () => {
    const first = await startReplica();
    await createHoldingTool(first);
    const asyncRun = await startAsync(first, 'first-async');
    const syncRun = callServer<Run>(first, 'POST', '/v1/tools/replica-write/run', {
      inputs: { key: 'first-sync' },
    });
    await untilHeld('first-async', 'first-sync');

    // Its startup recovery and its operator's first look at every ToolRun happen while both runs execute.
    const second = await startReplica();
    const itsOwn = await startAsync(second, 'second-async');
    await untilHeld('second-async');
    answerHeld();

    expect(await syncRun).toMatchObject({ status: 'success', attempt: 1 });
    expect(await waitForServerRun<Run>(second, asyncRun)).toMatchObject({ status: 'success', attempt: 1 });
    expect(await waitForServerRun<Run>(first, itsOwn)).toMatchObject({ status: 'success', attempt: 1 });
  });

  it('fails the async runs of a process killed with -9 from the process that lives on', async () => {
    // Alone, the doomed process executes the run itself; the survivor starts beside it.
    const doomed = await startReplica();
    await createHoldingTool(doomed);
    const runId = await startAsync(doomed, 'doomed-async');
    await untilHeld('doomed-async');
    const survivor = await startReplica();
    expect(await callServer<Run>(survivor, 'GET', `/v1/runs/${runId}`)).toMatchObject({ status: 'running' });

    doomed.child.kill('SIGKILL');
    await doomed.exited;
    expect(await waitForServerRun<Run>(survivor, runId)).toMatchObject({
      status: 'failed',
      error: 'The process executing this run stopped before it finished',
    });
  });
});
