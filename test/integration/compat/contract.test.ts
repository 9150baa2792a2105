/**
 * superglue's own clients against kubeglue, unmodified: every request the `sg` CLI (superglue-ai/cli
 * 1.1.35) and its bundled `/v1` client send for the commands whose feature kubeglue has (tools, runs,
 * systems, logs, downloads), replayed with exactly the method, path, query, headers and body fields they
 * send, and checked for what the CLI reads back (through test/support/superglue-like-client.ts).
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN_KEY, useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { SuperglueLikeClient, subscribeToLogs } from '../../support/superglue-like-client.ts';

const CRM_KEY = 'crm-api-key-6c1f0e93b2';
const CRM_KEY_ROTATED = 'crm-api-key-rotated-44d0a1';

async function eventually(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const target = useHttpTarget();
const api = useTestApi();
let sg: SuperglueLikeClient;

beforeAll(async () => {
  target.route('GET', '/contacts', (req) => ({
    body: {
      contacts: [{ name: 'ada' }, { name: 'linus' }],
      sawKey: req.headers['x-api-key'] === CRM_KEY || req.headers['x-api-key'] === CRM_KEY_ROTATED,
    },
  }));
  // SUPERGLUE_API_ENDPOINT is the server's base URL without /v1: the client adds /v1 to every path.
  sg = new SuperglueLikeClient(api.url, TEST_ADMIN_KEY);
});

/** A draft as `sg tool build --config` writes it: the config plus inputSchema, timestamps and systemIds. */
function draftConfig() {
  const now = new Date().toISOString();
  return {
    id: 'crm-contacts',
    instruction: 'List the CRM contacts',
    steps: [
      {
        id: 'contacts',
        config: {
          url: '/contacts',
          method: 'GET',
          headers: { 'X-Api-Key': '<<crm_api_key>>' },
          systemId: 'crm',
        },
      },
    ],
    outputTransform:
      '(s) => ({ names: s.contacts.data.contacts.map((c) => c.name), sawKey: s.contacts.data.sawKey })',
    inputSchema: {
      type: 'object',
      properties: { limit: { type: 'number' } },
      required: ['limit'],
    },
    createdAt: now,
    updatedAt: now,
  };
}

describe('sg whoami', () => {
  it('GET /v1/me: the key, as userId and roleIds', async () => {
    const me = await sg.request('GET', '/v1/me');
    expect(me).toMatchObject({ userId: expect.any(String), roleIds: ['admin'], admin: true, toolIds: null });
    expect(me.id).toBe(me.userId);
    expect(JSON.stringify(me)).not.toContain(TEST_ADMIN_KEY);
  });
});

describe('sg system', () => {
  it('create: POST /v1/systems with the fields the CLI sends, answered as { data }', async () => {
    // sg system create --name "CRM" --url <url> --instructions "…" --credentials '{"api_key":"…"}'
    // (no --id: the CLI derives it from the name with slugify, "CRM" → "crm")
    const created = await sg.request('POST', '/v1/systems', {
      id: 'crm',
      name: 'CRM',
      url: target.url,
      specificInstructions: 'Contacts live under /contacts',
      credentials: { api_key: CRM_KEY },
    });
    expect(created.data).toMatchObject({ id: 'crm', name: 'CRM', url: target.url });

    // A URL that matches one of the CLI's templates adds templateName (and OAuth settings as credentials).
    const templated = await sg.request('POST', '/v1/systems', {
      id: 'billing',
      name: 'Billing',
      url: 'https://billing.example.com',
      templateName: 'stripe',
      credentials: { api_key: 'sk-test-1234' },
      authentication: { type: 'api_key' },
    });
    expect(templated.data).toMatchObject({ id: 'billing', authentication: { type: 'none' } });
  });

  it('edit: GET then PATCH /v1/systems/{id} with the merged credentials (placeholders keep values)', async () => {
    // sg system edit --id crm --name "CRM v2" --credentials '{"api_key":"…rotated"}'
    const existing = await sg.request('GET', '/v1/systems/crm');
    expect(existing.data.credentials).toEqual({ api_key: '<<crm_api_key>>' });
    const credentials = { ...existing.data.credentials, api_key: CRM_KEY_ROTATED, region: 'eu' };
    const updated = await sg.request('PATCH', '/v1/systems/crm', {
      id: 'crm',
      name: 'CRM v2',
      specificInstructions: 'still /contacts',
      credentials,
    });
    expect(updated.data).toMatchObject({ id: 'crm', name: 'CRM v2', url: target.url });
    expect(updated.data.credentials).toEqual({ api_key: '<<crm_api_key>>', region: '<<crm_region>>' });
    // Only what was given changed; PATCH without credentials keeps them.
    const renamed = await sg.request('PATCH', '/v1/systems/crm', { id: 'crm', name: 'CRM' });
    expect(renamed.data).toMatchObject({ name: 'CRM', hasUserCredentials: true });
    // Back to the first key for the runs below.
    await sg.request('PATCH', '/v1/systems/crm', { id: 'crm', credentials: { api_key: CRM_KEY } });
  });

  it('list: GET /v1/systems?limit=&page= shows auth type and whether credentials are stored', async () => {
    // sg system list (default --limit 25)
    const listed = await sg.request('GET', '/v1/systems?limit=25&page=1');
    expect(listed.total).toBe(2);
    const crm = listed.data.find((s: { id: string }) => s.id === 'crm');
    expect(crm).toMatchObject({ name: 'CRM', url: target.url, hasUserCredentials: true });
    expect(crm.authentication?.type ?? 'none').toBe('none');
    // sg system find <query> lists 100.
    expect((await sg.request('GET', '/v1/systems?limit=100&page=1')).data).toHaveLength(2);
  });

  it('find --id: GET /v1/systems/{id}, then its credential keys from GET /v1/credentials?systemId=', async () => {
    const system = (await sg.request('GET', '/v1/systems/crm')).data;
    expect(system.hasUserCredentials).toBe(true);
    const sets = (await sg.request('GET', '/v1/credentials?systemId=crm')).data.items;
    const owned = sets.filter((set: { isOwner: boolean }) => set.isOwner);
    const chosen = owned.find((set: { isDefault: boolean }) => set.isDefault) ?? owned[0];
    expect(chosen.credentialKeys).toEqual([{ key: 'api_key', hasValue: true }]);
    expect(JSON.stringify(sets)).not.toContain(CRM_KEY);
  });
});

describe('sg tool', () => {
  let draftTraceId = '';

  it('run --draft: POST /v1/tools/run?createRun=true with X-Trace-Id, and the log stream of that trace', async () => {
    const config = draftConfig();
    draftTraceId = randomUUID();
    const logs = subscribeToLogs(sg, draftTraceId);
    const res = await sg.request(
      'POST',
      '/v1/tools/run?createRun=true',
      {
        tool: config,
        payload: { limit: 2 },
        includeStepResultData: false,
        options: { requestSource: 'cli' },
        executionKind: 'draft',
        parentToolId: config.id,
        draftId: 'draft_3f1b2c',
      },
      { 'X-Trace-Id': draftTraceId },
    );
    // What the CLI reads: success from status, data, error, tool, stepResults.
    expect(res.status).toBe('success');
    expect(res.data).toEqual({ names: ['ada', 'linus'], sawKey: true });
    expect(res.tool.id).toBe('crm-contacts');
    expect(res.stepResults).toEqual([
      { stepId: 'contacts', success: true, startedAt: expect.any(String), durationMs: expect.any(Number) },
    ]);
    expect(res.traceId).toBe(draftTraceId);
    await eventually(() => logs.messages.some((log) => log.type === 'run_finished'));
    // The CLI unsubscribes as soon as the answer is there: the stream is still open then, so it does
    // not wait to reconnect.
    expect(logs.endedByServer()).toBe(false);
    await logs.unsubscribe();
    expect(logs.status()).toBe(200);
    expect(logs.messages.map((log) => log.message)).toEqual([
      `Run ${res.runId} of tool 'crm-contacts' started`,
      "Step 'contacts' started",
      expect.stringMatching(/^Step 'contacts' succeeded in \d+ ms$/),
      expect.stringMatching(new RegExp(`^Run ${res.runId} succeeded in \\d+ ms$`)),
    ]);
    // The recorded draft run is a run like any other.
    expect((await sg.request('GET', `/v1/runs/${res.runId}`)).status).toBe('success');
  });

  it('run --config: the same request without a draft id', async () => {
    const config = draftConfig();
    const traceId = randomUUID();
    const res = await sg.request(
      'POST',
      '/v1/tools/run?createRun=true',
      {
        tool: config,
        payload: { limit: 2 },
        includeStepResultData: true,
        options: { requestSource: 'cli', timeout: 60_000 },
        executionKind: 'full',
      },
      { 'X-Trace-Id': traceId },
    );
    expect(res.status).toBe('success');
    expect(res.stepResults[0]).toMatchObject({ stepId: 'contacts', success: true, data: expect.any(Object) });
  });

  it('save --draft (new tool): GET /v1/tools/{id} → 404 → POST /v1/tools with the draft and systemIds', async () => {
    const config = draftConfig();
    expect(await sg.orNull(sg.request('GET', `/v1/tools/${encodeURIComponent(config.id)}`))).toBeNull();
    const saved = await sg.request('POST', '/v1/tools', { ...config, id: config.id, systemIds: [] });
    expect(saved.id).toBe('crm-contacts');
  });

  it('save --draft (existing tool): PUT /v1/tools/{id}, systemIds as the draft has them', async () => {
    const config = { ...draftConfig(), instruction: 'List CRM contacts (v2)' };
    const existing = await sg.orNull(sg.request('GET', `/v1/tools/${encodeURIComponent(config.id)}`));
    expect(existing).not.toBeNull();
    const saved = await sg.request('PUT', `/v1/tools/${encodeURIComponent(config.id)}`, {
      ...config,
      id: config.id,
      systemIds: ['crm'],
    });
    expect(saved).toMatchObject({ id: 'crm-contacts', instruction: 'List CRM contacts (v2)' });
  });

  it('edit --tool, then save: the fetched tool goes back as is (with updatedAt and systemIds)', async () => {
    const fetched = await sg.request('GET', '/v1/tools/crm-contacts');
    // sg tool edit applies JSON Patch locally; the draft is the fetched tool, patched.
    const patched = { ...fetched, name: 'CRM contacts', updatedAt: new Date().toISOString() };
    const saved = await sg.request('PUT', '/v1/tools/crm-contacts', {
      ...patched,
      id: 'crm-contacts',
      systemIds: patched.systemIds || [],
    });
    expect(saved.name).toBe('CRM contacts');
  });

  it('a tool id with spaces (superglue ids are custom strings): saved, read and run by its encoded id', async () => {
    const config = { ...draftConfig(), id: 'My Tool' };
    const saved = await sg.request('POST', '/v1/tools', { ...config, systemIds: ['crm'] });
    expect(saved.id).toBe('My Tool');
    expect((await sg.request('GET', `/v1/tools/${encodeURIComponent('My Tool')}`)).id).toBe('My Tool');
    const run = await sg.request('POST', `/v1/tools/${encodeURIComponent('My Tool')}/run`, {
      inputs: { limit: 1 },
      includeStepResultData: false,
      options: { requestSource: 'cli', traceId: randomUUID() },
    });
    expect(run).toMatchObject({ status: 'success', toolId: 'My Tool' });
  });

  it('list: GET /v1/tools?limit=25&page=1; find <query>: limit=1000 is clamped, not refused', async () => {
    const listed = await sg.request('GET', '/v1/tools?limit=25&page=1');
    expect(listed.total).toBe(2);
    expect(listed.data.map((tool: { id: string; steps: unknown[] }) => [tool.id, tool.steps.length])).toEqual(
      [
        ['crm-contacts', 1],
        ['My Tool', 1],
      ],
    );
    const all = await sg.request('GET', '/v1/tools?limit=1000&page=1');
    expect(all.limit).toBe(100);
    expect(all.data).toHaveLength(2);
  });

  it('find --id: GET /v1/tools/{id}, null for an unknown id', async () => {
    const tool = await sg.request('GET', '/v1/tools/crm-contacts');
    expect(Object.keys(tool)).toEqual(expect.arrayContaining(['id', 'steps', 'instruction', 'inputSchema']));
    expect(await sg.orNull(sg.request('GET', '/v1/tools/nope'))).toBeNull();
  });

  it('run --tool: POST /v1/tools/{id}/run with includeStepResultData false, and the log stream', async () => {
    const traceId = randomUUID();
    const logs = subscribeToLogs(sg, traceId);
    const res = await sg.request('POST', '/v1/tools/crm-contacts/run', {
      inputs: { limit: 2 },
      includeStepResultData: false,
      options: { requestSource: 'cli', traceId },
    });
    expect(res).toMatchObject({ status: 'success', data: { names: ['ada', 'linus'], sawKey: true } });
    expect(res.stepResults).toEqual([
      { stepId: 'contacts', success: true, startedAt: expect.any(String), durationMs: expect.any(Number) },
    ]);
    expect(res.requestSource).toBe('cli');
    await eventually(() => logs.messages.some((log) => log.type === 'run_finished'));
    expect(logs.endedByServer()).toBe(false);
    await logs.unsubscribe();
    expect(logs.messages.length).toBeGreaterThanOrEqual(4);

    // --include-step-results sends true: full step results.
    const full = await sg.request('POST', '/v1/tools/crm-contacts/run', {
      inputs: { limit: 2 },
      includeStepResultData: true,
      options: { requestSource: 'cli', traceId: randomUUID() },
    });
    expect(full.stepResults[0].data).toMatchObject({ contacts: expect.any(Array) });
  });

  it('run --tool with a failing tool: success false and the error (the CLI exits 1)', async () => {
    await sg.request('POST', '/v1/tools', {
      id: 'broken',
      steps: [{ id: 'missing', config: { url: '/missing', systemId: 'crm' } }],
      systemIds: [],
    });
    const res = await sg.request('POST', '/v1/tools/broken/run', {
      includeStepResultData: false,
      options: { requestSource: 'cli', traceId: randomUUID() },
    });
    expect(res.status).toBe('failed');
    expect(res.error).toMatch(/Step missing failed/);
    expect(res.stepResults).toEqual([
      expect.objectContaining({ stepId: 'missing', success: false, error: expect.any(String) }),
    ]);
  });

  it('systemIds naming a system no step uses is refused with the field named', async () => {
    await expect(
      sg.request('POST', '/v1/tools', { ...draftConfig(), id: 'typo', systemIds: ['crn'] }),
    ).rejects.toThrow(/systemIds: 'crn' is not the systemId of any step/);
  });

  it('keys nobody sends are still refused, naming them', async () => {
    await expect(
      sg.request('POST', '/v1/tools/crm-contacts/run', { inputs: {}, includeStepResultsData: false }),
    ).rejects.toThrow(/includeStepResultsData/);
  });

  it('step run (the client executeStep, streaming variant): JSON answer the client accepts', async () => {
    const res = await sg.request(
      'POST',
      '/v1/tools/step/run?stream=true',
      {
        step: {
          id: 'double',
          config: { type: 'transform', transformCode: '(s) => s.contacts.data.length * s.n' },
        },
        payload: { n: 2 },
        previousResults: { contacts: { data: [1, 2, 3] } },
        systemIds: [],
        createRun: false,
        stepIndex: 1,
        stepId: 'double',
      },
      { Accept: 'text/event-stream' },
    );
    expect(res).toMatchObject({ stepId: 'double', success: true, data: 6 });
  });
});

describe('sg run', () => {
  let runId = '';

  beforeAll(async () => {
    // A run of the tool as the CLI starts one, with a file artifact to download.
    await sg.request('PUT', '/v1/tools/crm-contacts', {
      outputTransform:
        '(s) => ({ names: s.contacts.data.contacts.map((c) => c.name), __files__: { "contacts.csv": "name\\nada\\nlinus\\n" } })',
    });
    const res = await sg.request('POST', '/v1/tools/crm-contacts/run', {
      inputs: { limit: 2 },
      includeStepResultData: false,
      options: { requestSource: 'cli', traceId: randomUUID() },
    });
    expect(res.status).toBe('success');
    expect(res.fileArtifacts).toEqual([expect.objectContaining({ fileKey: 'contacts.csv' })]);
    runId = res.runId;
  });

  it('list with every filter: GET /v1/runs?limit&page&toolId&status&requestSources&userId&systemId', async () => {
    const me = await sg.request('GET', '/v1/me');
    const params = new URLSearchParams({ limit: '10', page: '1' });
    params.set('toolId', 'crm-contacts');
    params.set('status', 'success');
    params.set('requestSources', ['cli'].join(','));
    params.set('userId', me.userId);
    params.set('systemId', 'crm');
    const listed = await sg.request('GET', `/v1/runs?${params}`);
    expect(listed).toMatchObject({ page: 1, limit: 10, hasMore: false });
    expect(listed.total).toBeGreaterThanOrEqual(3);
    const mine = listed.data.find((run: { runId: string }) => run.runId === runId);
    expect(mine).toMatchObject({ toolId: 'crm-contacts', status: 'success', requestSource: 'cli' });
    expect(mine.metadata.startedAt).toEqual(expect.any(String));
    // `--offset 10 --limit 10` → page 2.
    expect((await sg.request('GET', '/v1/runs?limit=10&page=2&toolId=crm-contacts')).page).toBe(2);
  });

  it('get: GET /v1/runs/{id}; an unknown run is null ("not found")', async () => {
    const run = await sg.request('GET', `/v1/runs/${runId}`);
    expect(run).toMatchObject({ runId, toolId: 'crm-contacts', status: 'success', requestSource: 'cli' });
    expect(run.toolPayload).toEqual({ limit: 2 });
    expect(await sg.orNull(sg.request('GET', '/v1/runs/no-such-run'))).toBeNull();
  });

  it('download: the downloadUrl of each file artifact, fetched without an API key', async () => {
    const run = await sg.request('GET', `/v1/runs/${runId}`);
    const [file] = run.fileArtifacts;
    expect(file).toMatchObject({ fileKey: 'contacts.csv', filename: 'contacts.csv', size: 15 });
    const response = await fetch(file.downloadUrl);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('name\nada\nlinus\n');
  });

  it('async run and cancel (the client runTool with options.async, abortToolExecution)', async () => {
    target.route('GET', '/slow', { delayMs: 5_000, body: [] });
    await sg.request('POST', '/v1/tools', {
      id: 'slow',
      steps: [{ id: 'wait', config: { url: '/slow', systemId: 'crm' } }],
    });
    const started = await sg.request('POST', '/v1/tools/slow/run', {
      inputs: {},
      options: { async: true, requestSource: 'cli', traceId: randomUUID() },
    });
    expect(started.status).toBe('running');
    // POST /v1/runs/{id}/cancel without a body and without a content type.
    const cancelled = await sg.request('POST', `/v1/runs/${encodeURIComponent(started.runId)}/cancel`);
    expect(cancelled.runId).toBe(started.runId);
    expect((await waitForRun(api, started.runId)).status).toBe('aborted');
  });

  it('delete: DELETE /v1/tools/{id} without a body', async () => {
    await sg.request('DELETE', '/v1/tools/slow');
    expect(await sg.orNull(sg.request('GET', '/v1/tools/slow'))).toBeNull();
  });
});

describe('generic clients', () => {
  it('an empty body with Content-Type: application/json is no body on cancel, delete and run', async () => {
    const json = { 'content-type': 'application/json' };
    await sg.request('POST', '/v1/tools', {
      id: 'empty-body',
      steps: [{ id: 'a', config: { type: 'transform', transformCode: '() => 1' } }],
    });
    const run = await api.call<{ runId: string; status: string }>('POST', '/v1/tools/empty-body/run', {
      rawBody: '',
      headers: json,
    });
    expect(run.status).toBe(200);
    expect(run.body.status).toBe('success');
    const cancel = await api.call('POST', `/v1/runs/${run.body.runId}/cancel`, {
      rawBody: '',
      headers: json,
    });
    expect(cancel.body).toMatchObject({ error: { code: 'KG_ERR_RUN_NOT_CANCELLABLE' } });
    const deleted = await api.call('DELETE', '/v1/tools/empty-body', { rawBody: '', headers: json });
    expect(deleted).toMatchObject({ status: 200, body: { success: true } });
    // A body that is required stays required; malformed JSON stays malformed.
    expect((await api.call('POST', '/v1/tools', { rawBody: '', headers: json })).status).toBe(400);
    const malformed = await api.call('POST', '/v1/tools', { rawBody: '{', headers: json });
    expect(malformed.body).toMatchObject({ error: { code: 'KG_ERR_MALFORMED_REQUEST' } });
  });

  it('superglue-only run fields: accepted when empty, refused with a reason when they would matter', async () => {
    const ok = await sg.request('POST', '/v1/tools/crm-contacts/run', {
      inputs: { limit: 1 },
      files: {},
      stateFixture: {},
      options: { clientInfo: { name: 'sg', version: '1.1.35' }, pinnedCredentials: {} },
    });
    expect(ok.status).toBe('success');
    await expect(
      sg.request('POST', '/v1/tools/crm-contacts/run', { options: { pinnedCredentials: { crm: 'set-1' } } }),
    ).rejects.toThrow(/options.pinnedCredentials: kubeglue has no credential sets/);
  });
});
