/**
 * Persistent tool state through the embedded deployment (docs/state.md): sync and async runs (the pool
 * launcher) read `sourceData.persistedState` and save what their transforms changed only when they
 * succeed; concurrent runs compare and set per key; limits and credentials refuse a write as a whole with a
 * warning on the run; stateFixture seeds one run and saves nothing; `/v1/tools/{id}/state` shows,
 * replaces and resets it with the key's scopes and tool restriction.
 */
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN_KEY, useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
// Small limits, so the tests of them stay small (the defaults are 100 keys and 64 KB).
const api = useTestApi({ KUBEGLUE_TOOL_STATE_MAX_KEYS: '5', KUBEGLUE_TOOL_STATE_MAX_VALUE_BYTES: '200' });

interface RunBody {
  runId: string;
  status: string;
  error?: string;
  data?: unknown;
  metadata: {
    warnings?: string[];
    state?: { versionRead?: number; versionWritten?: number; fixture?: true };
  };
}

interface StateBody {
  toolId: string;
  state: Record<string, unknown>;
  version: number;
  updatedAt: string | null;
}

async function createTool(tool: Record<string, unknown>): Promise<void> {
  const created = await api.call('POST', '/v1/tools', { body: tool });
  expect(created.status, created.text).toBe(201);
}

async function runTool(toolId: string, body: Record<string, unknown> = {}, key?: string) {
  return api.call<RunBody>('POST', `/v1/tools/${toolId}/run`, { body, ...(key ? { key } : {}) });
}

async function stateOf(toolId: string): Promise<StateBody> {
  const answer = await api.call<StateBody>('GET', `/v1/tools/${toolId}/state`);
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  for (const start = Date.now(); !check(); await sleep(20)) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting until ${what}`);
  }
}

const transform = (id: string, transformCode: string) => ({
  id,
  config: { type: 'transform', transformCode },
});

/** An incremental sync: fetch what changed since the saved cursor, save the new cursor. */
const syncTool = (id: string, path: string) => ({
  id,
  steps: [
    {
      id: 'changes',
      config: {
        url: `${target.url}${path}`,
        queryParams: { since: '<<(sourceData) => sourceData.persistedState.cursor || "start">>' },
      },
    },
    transform(
      'remember',
      '(sourceData) => { sourceData.persistedState.cursor = sourceData.changes.data.next; return sourceData.changes.data.items; }',
    ),
  ],
});

const sinceOf = (path: string) =>
  target.requests.filter((request) => request.path === path).map((request) => request.query[0]?.[1]);

describe('runs read and save the state', () => {
  beforeAll(() => {
    let next = 0;
    target.route('GET', '/sync', () => ({ body: { items: [next], next: `c${++next}` } }));
  });

  it('the first run reads {} (version 0) and saves its cursor; the next run reads it', async () => {
    await createTool(syncTool('sync', '/sync'));
    const first = await runTool('sync');
    expect(first.body).toMatchObject({
      status: 'success',
      metadata: { state: { versionRead: 0, versionWritten: 1 } },
    });
    expect(first.body.metadata.warnings).toBeUndefined();
    expect(await stateOf('sync')).toMatchObject({ toolId: 'sync', state: { cursor: 'c1' }, version: 1 });

    const second = await runTool('sync');
    expect(second.body.metadata.state).toEqual({ versionRead: 1, versionWritten: 2 });
    expect(sinceOf('/sync')).toEqual(['start', 'c1']);
    // The run record says the same later.
    const stored = await api.call<RunBody>('GET', `/v1/runs/${second.body.runId}`);
    expect(stored.body.metadata.state).toEqual({ versionRead: 1, versionWritten: 2 });
    expect((await stateOf('sync')).state).toEqual({ cursor: 'c2' });
  });

  it('an async run (the pool launcher) saves its state when it succeeds', async () => {
    const accepted = await runTool('sync', { options: { async: true } });
    expect(accepted.status).toBe(202);
    const done = await waitForRun<RunBody>(api, accepted.body.runId);
    expect(done).toMatchObject({
      status: 'success',
      metadata: { state: { versionRead: 2, versionWritten: 3 } },
    });
    expect((await stateOf('sync')).state).toEqual({ cursor: 'c3' });
  });

  it('a run that fails after its transform wrote saves nothing', async () => {
    target.route('GET', '/broken', { status: 500, body: { error: 'down' } });
    await createTool({
      id: 'fails-late',
      steps: [
        transform('mark', '(s) => { s.persistedState.marked = true; return 1; }'),
        { id: 'call', config: { url: `${target.url}/broken` } },
      ],
    });
    const failed = await runTool('fails-late');
    expect(failed.body.status).toBe('failed');
    expect(failed.body.metadata.state).toEqual({ versionRead: 0 });
    expect(await stateOf('fails-late')).toMatchObject({ state: {}, version: 0 });
  });

  it('a cancelled run saves nothing', async () => {
    const held: ServerResponse[] = target.hold('/held-cancel');
    await createTool({
      id: 'cancelled',
      steps: [
        transform('mark', '(s) => { s.persistedState.marked = true; return 1; }'),
        { id: 'wait', config: { url: `${target.url}/held-cancel` } },
      ],
    });
    const accepted = await runTool('cancelled', { options: { async: true } });
    await until('the run waits at the target', () => held.length === 1);
    const cancel = await api.call('POST', `/v1/runs/${accepted.body.runId}/cancel`);
    expect(cancel.status).toBe(200);
    const done = await waitForRun<RunBody>(api, accepted.body.runId);
    expect(done.status).toBe('aborted');
    expect(await stateOf('cancelled')).toMatchObject({ state: {}, version: 0 });
  });
});

describe('concurrent runs of one tool', () => {
  it('a key another run changed since this run read it is not overwritten: the run says so, its other keys are saved', async () => {
    const held = target.hold('/held-cas');
    await createTool({
      id: 'cas',
      steps: [
        transform(
          'mark',
          '(s) => { s.persistedState.last = s.who; s.persistedState["by_" + s.who] = true; return s.who; }',
        ),
        { id: 'wait', config: { url: `${target.url}/held-cas`, queryParams: { who: '<<who>>' } } },
      ],
    });
    const a = runTool('cas', { inputs: { who: 'a' } });
    const b = runTool('cas', { inputs: { who: 'b' } });
    // Both have read the state (version 0) and wait at the target.
    await until('both runs wait at the target', () => held.length === 2);
    const whoOf = (res: ServerResponse) => new URL(res.req.url ?? '', 'http://x').searchParams.get('who');
    const release = (who: string) => {
      const res = held.find((r) => whoOf(r) === who) as ServerResponse;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    };
    release('a');
    const first = await a;
    expect(first.body.metadata).toMatchObject({ state: { versionRead: 0, versionWritten: 1 } });
    release('b');
    const second = await b;
    expect(second.body.status).toBe('success');
    expect(second.body.metadata.state).toEqual({ versionRead: 0, versionWritten: 2 });
    expect(second.body.metadata.warnings).toEqual([
      "persistedState key 'last' not saved: another run (or a change through /v1/tools/{id}/state) changed it after this run read the state",
    ]);
    expect((await stateOf('cas')).state).toEqual({ last: 'a', by_a: true, by_b: true });
  });
});

describe('limits and credentials', () => {
  /** Saves a tool of one transform step and runs it. */
  async function runOneTransform(toolId: string, transformCode: string) {
    await createTool({ id: toolId, steps: [transform('fill', transformCode)] });
    return runTool(toolId);
  }

  it('past the key limit the run succeeds, saves no key and says why', async () => {
    const run = await runOneTransform(
      'many-keys',
      '(s) => { for (let i = 0; i < 6; i++) s.persistedState["k" + i] = i; return null; }',
    );
    expect(run.body.status).toBe('success');
    expect(run.body.metadata.warnings).toEqual([
      'persistedState was not saved: it would have 6 keys, more than the limit of 5 (KUBEGLUE_TOOL_STATE_MAX_KEYS)',
    ]);
    expect(run.body.metadata.state).toEqual({ versionRead: 0 });
    expect(await stateOf('many-keys')).toMatchObject({ state: {}, version: 0 });
  });

  it('one value past the size limit: not even the small keys of the run are saved', async () => {
    const run = await runOneTransform(
      'big-value',
      '(s) => { s.persistedState.small = 1; s.persistedState.big = "x".repeat(300); return null; }',
    );
    expect(run.body.metadata.warnings).toEqual([
      "persistedState was not saved: the value of 'big' is 302 bytes of JSON, more than the limit of 200 (KUBEGLUE_TOOL_STATE_MAX_VALUE_BYTES)",
    ]);
    expect((await stateOf('big-value')).state).toEqual({});
  });

  it("a write holding a credential of the tool's system is refused, and never shown", async () => {
    const secret = 'crm-secret-value-93ab1f';
    const system = await api.call('POST', '/v1/systems', {
      body: { id: 'crmstate', url: target.url, credentials: { apiKey: secret }, codeAccess: true },
    });
    expect(system.status, system.text).toBe(201);
    target.route('GET', '/crm-items', { body: [] });
    await createTool({
      id: 'leaky',
      steps: [
        { id: 'items', config: { systemId: 'crmstate', url: '/crm-items' } },
        transform(
          'copy',
          '(s) => { s.persistedState.token = s.crmstate_apiKey; s.persistedState.ok = 1; return null; }',
        ),
      ],
    });
    const run = await runTool('leaky');
    expect(run.body.status).toBe('success');
    expect(run.body.metadata.warnings).toEqual([
      "persistedState was not saved: 'token' holds a credential value of the run's systems (state is stored unencrypted; keep credentials out of it)",
    ]);
    expect((await stateOf('leaky')).state).toEqual({});
    // PUT refuses it too, naming the key and never the value.
    const put = await api.call('PUT', '/v1/tools/leaky/state', {
      body: { state: { note: `key ${secret}` } },
    });
    expect(put.status).toBe(422);
    expect(put.body).toMatchObject({ error: { code: 'KG_ERR_TOOL_STATE_CREDENTIAL' } });
    expect(put.text).toContain("'note'");
    expect(api.bodies.some((body) => body.includes(secret))).toBe(false);
  });

  it('GET shows a value that became a credential later (a key rotated to it) as its placeholder', async () => {
    const rotated = 'rotated-secret-7781cc';
    const put = await api.call('PUT', '/v1/tools/leaky/state', { body: { state: { note: rotated, n: 1 } } });
    expect(put.status, put.text).toBe(200);
    const patched = await api.call('PATCH', '/v1/systems/crmstate', {
      body: { credentials: { apiKey: rotated } },
    });
    expect(patched.status, patched.text).toBe(200);
    expect((await stateOf('leaky')).state).toEqual({ note: '<<crmstate_apiKey>>', n: 1 });
  });
});

describe('stateFixture', () => {
  it('seeds one run, sync or async; nothing is saved; a chained tool runs with its own real state', async () => {
    let n = 0;
    target.route('GET', '/fixture-sync', () => ({ body: { items: [], next: `f${++n}` } }));
    await createTool(syncTool('fixture-sync', '/fixture-sync'));
    await createTool(syncTool('fixture-chained', '/fixture-sync'));
    await api.call('PUT', '/v1/tools/fixture-sync/state', { body: { state: { cursor: 'real' } } });

    const seeded = await runTool('fixture-sync', {
      stateFixture: { cursor: 'seeded' },
      options: { webhookUrl: 'tool:fixture-chained' },
    });
    expect(seeded.body).toMatchObject({ status: 'success', metadata: { state: { fixture: true } } });
    const seededAsync = await runTool('fixture-sync', {
      stateFixture: { cursor: 'seeded-async' },
      options: { async: true },
    });
    expect((await waitForRun<RunBody>(api, seededAsync.body.runId)).metadata.state).toEqual({
      fixture: true,
    });
    expect(await stateOf('fixture-sync')).toMatchObject({ state: { cursor: 'real' }, version: 1 });
    // The chained run read and saved fixture-chained's own state.
    await until('the chained tool saved its state', () => sinceOf('/fixture-sync').length === 3);
    const chained = await (async () => {
      for (;;) {
        const state = await stateOf('fixture-chained');
        if (state.version > 0) return state;
        await sleep(20);
      }
    })();
    expect(chained.state).toEqual({ cursor: expect.stringMatching(/^f\d$/) });
    expect(sinceOf('/fixture-sync').sort()).toEqual(['seeded', 'seeded-async', 'start']);
  });

  it('an unsaved definition reads {} (or its fixture) and never saves, even under a saved tool’s id', async () => {
    target.route('GET', '/draft', { body: { items: [], next: 'draft-cursor' } });
    const draft = await api.call<RunBody>('POST', '/v1/tools/run?createRun=true', {
      body: { tool: syncTool('sync', '/draft') },
    });
    expect(draft.body).toMatchObject({ status: 'success', metadata: { state: { fixture: true } } });
    expect(sinceOf('/draft')).toEqual(['start']);
    expect((await stateOf('sync')).state).toEqual({ cursor: 'c3' });
  });

  it('a fixture past the limits is refused before the run starts', async () => {
    const refused = await runTool('sync', { stateFixture: { a: 1, b: 2, c: 3, d: 4, e: 5, f: 6 } });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: { code: 'KG_ERR_VALIDATION' } });
    expect(refused.text).toContain('stateFixture: it would have 6 keys');
  });
});

describe('/v1/tools/{toolId}/state', () => {
  it('replaces, shows and resets the state; the version counts every write', async () => {
    await createTool(syncTool('rest-state', '/sync'));
    expect(await stateOf('rest-state')).toEqual({
      toolId: 'rest-state',
      state: {},
      version: 0,
      updatedAt: null,
    });
    const put = await api.call('PUT', '/v1/tools/rest-state/state', {
      body: { state: { cursor: 'x', seen: [1, 2] } },
    });
    expect(put).toMatchObject({ status: 200, body: { toolId: 'rest-state', version: 1, warnings: [] } });
    const shown = await stateOf('rest-state');
    expect(shown).toMatchObject({ state: { cursor: 'x', seen: [1, 2] }, version: 1 });
    expect(Date.parse(shown.updatedAt ?? '')).toBeGreaterThan(0);
    const reset = await api.call('DELETE', '/v1/tools/rest-state/state');
    expect(reset).toMatchObject({ status: 200, body: { toolId: 'rest-state', deletedKeys: 2, version: 2 } });
    expect(await stateOf('rest-state')).toMatchObject({ state: {}, version: 2 });
  });

  it('refuses a state past the limits, and an unknown tool', async () => {
    const tooMany = await api.call('PUT', '/v1/tools/rest-state/state', {
      body: { state: { a: 1, b: 2, c: 3, d: 4, e: 5, f: 6 } },
    });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body).toMatchObject({ error: { code: 'KG_ERR_TOOL_STATE_LIMIT' } });
    expect((await api.call('GET', '/v1/tools/nope/state')).status).toBe(404);
    expect((await api.call('PUT', '/v1/tools/nope/state', { body: { state: {} } })).status).toBe(404);
    expect((await api.call('DELETE', '/v1/tools/nope/state')).status).toBe(404);
    const notAnObject = await api.call('PUT', '/v1/tools/rest-state/state', { body: { state: [1] } });
    expect(notAnObject.status).toBe(400);
  });

  it('warns a PUT that runs of the tool are in progress', async () => {
    const held = target.hold('/held-put');
    await createTool({
      id: 'busy',
      steps: [
        transform('mark', '(s) => { s.persistedState.n = 1; return 1; }'),
        { id: 'wait', config: { url: `${target.url}/held-put` } },
      ],
    });
    const running = runTool('busy');
    await until('the run waits at the target', () => held.length === 1);
    const put = await api.call<{ warnings: string[] }>('PUT', '/v1/tools/busy/state', {
      body: { state: { n: 5 } },
    });
    expect(put.body.warnings).toEqual([
      "1 run of tool 'busy' is in progress: their changes to keys whose value this replaced will not be saved (they conflict)",
    ]);
    held[0]?.writeHead(200).end('{}');
    expect((await running).body.metadata.warnings).toEqual([
      "persistedState key 'n' not saved: another run (or a change through /v1/tools/{id}/state) changed it after this run read the state",
    ]);
    expect((await stateOf('busy')).state).toEqual({ n: 5 });
  });

  it("honours the key's scopes and tool restriction", async () => {
    const created = await api.call<{ key: string }>('POST', '/v1/api-keys', {
      body: { name: 'sync only', toolIds: ['sync'] },
    });
    const limited = created.body.key;
    expect((await api.call('GET', '/v1/tools/sync/state', { key: limited })).status).toBe(200);
    // Another tool answers like a missing one; writing needs tools:write, which this key lacks.
    expect((await api.call('GET', '/v1/tools/rest-state/state', { key: limited })).status).toBe(404);
    const put = await api.call('PUT', '/v1/tools/sync/state', { key: limited, body: { state: {} } });
    expect(put.status).toBe(403);
    expect((await api.call('DELETE', '/v1/tools/sync/state', { key: limited })).status).toBe(403);
    expect((await api.call('GET', '/v1/tools/sync/state', { key: null })).status).toBe(401);
    expect(TEST_ADMIN_KEY).not.toBe(limited);
  });

  it('deleting a tool deletes its state: a new tool of that id starts from nothing', async () => {
    await createTool(syncTool('short-lived', '/sync'));
    await api.call('PUT', '/v1/tools/short-lived/state', { body: { state: { cursor: 'old' } } });
    expect((await api.call('DELETE', '/v1/tools/short-lived')).status).toBe(200);
    await createTool(syncTool('short-lived', '/sync'));
    expect(await stateOf('short-lived')).toMatchObject({ state: {}, version: 0 });
  });
});
