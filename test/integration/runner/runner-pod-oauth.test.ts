import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../contract/json.ts';
import { INTERNAL_PATHS } from '../../../contract/wire/runner.ts';
import { accessTokenHash } from '../../../contract/wire/token-hash.ts';
import { PERMISSIVE_EGRESS } from '../../../engine/protocols/egress-policy.ts';
import { createEmbeddedKubeglueResources } from '../../../kube/resources/index.ts';
import { EmbeddedSecretStore } from '../../../kube/secrets/embedded.ts';
import { credentialsBox } from '../../../platform/secret-box.ts';
import { SystemOAuth } from '../../../systems/oauth/service.ts';
import { SystemService } from '../../../systems/service.ts';
import { useTempDir } from '../../support/fixture.ts';
import { createInternalApi, type InternalApiHarness } from '../../support/internal-api.ts';
import { CC_CLIENT, useOAuthProvider } from '../../support/oauth-provider.ts';
import { startRunnerProcess } from '../../support/runner-process.ts';
import { useTestStore } from '../../support/store.ts';

const NAMESPACE = 'default';
const MASTER_KEY = Buffer.alloc(32, 7);

const { store } = useTestStore('sqlite');
const dir = useTempDir('kubeglue-runner-oauth-');
const idp = useOAuthProvider({ redirectUris: ['http://127.0.0.1:9/v1/oauth/callback'] });
let oauth: SystemOAuth;
let systems: SystemService;
let api: InternalApiHarness;
/** Every answer body of the internal API except the access-token route's (which carries the token). */
const answers: string[] = [];

beforeAll(async () => {
  oauth = new SystemOAuth({
    store,
    masterKey: MASTER_KEY,
    namespace: NAMESPACE,
    publicUrl: 'http://127.0.0.1:9',
    egress: PERMISSIVE_EGRESS,
  });
  systems = new SystemService({
    resources: createEmbeddedKubeglueResources(store.resources, NAMESPACE),
    secrets: new EmbeddedSecretStore({ store, namespace: NAMESPACE, box: credentialsBox(MASTER_KEY) }),
    namespace: NAMESPACE,
    present: (resource, credentials) => oauth.present(resource, credentials),
  });
  oauth.attach(systems);
  await systems.start();
  await systems.create({ ...idp.clientCredentialsSystem('cc', { scopes: 'api:read' }), environment: 'prod' });
  await systems.create({ ...idp.authorizationCodeSystem('ac'), environment: 'prod' });
  api = createInternalApi(store, {
    resolveSystems: (ids, mode) => systems.resolveForRun(ids, mode),
    accessToken: (systemId, mode, rejected) => oauth.accessToken(systemId, mode, rejected),
  });
  api.app.addHook('onSend', async (request, _reply, payload) => {
    if (!request.url.endsWith('/access-token') && typeof payload === 'string') answers.push(payload);
    return payload;
  });
  await api.listen();
}, 60_000);

afterAll(async () => {
  await api?.close();
  await systems?.close();
  await oauth?.close();
});

function whoami(systemId: string, steps = 1): JsonObject {
  return {
    id: `whoami-${systemId}`,
    steps: Array.from({ length: steps }, (_, i) => ({
      id: `me${i + 1}`,
      config: { url: '/api/whoami', systemId },
    })),
  };
}

const runner = (runId: string, token: string) =>
  startRunnerProcess({ url: api.url, runId, token, dir: dir.path }).exited;

/** Everything of a run a user or the cluster can see: its record, step results and result. */
async function recordOf(runId: string): Promise<string> {
  const [run, steps, result] = await Promise.all([
    store.getRun(runId),
    store.getStepResults(runId),
    store.getRunResult(runId),
  ]);
  return JSON.stringify({ run, steps, result });
}

describe('managed OAuth tokens in runner Pods', () => {
  it('a run of a client-credentials system succeeds, and its token appears in no record, status or log', async () => {
    const before = idp.tokenRequests.client_credentials ?? 0;
    const token = await api.startRun('cc-1', whoami('cc', 2), { systemIds: ['cc'] });
    const { code, output, summary } = await runner('cc-1', token);
    expect(code, output).toBe(0);
    expect(summary).toMatchObject({ status: 'success', resultStored: true });
    expect(await store.getRunResult('cc-1')).toMatchObject({
      success: true,
      data: { clientId: '<<cc_clientId>>', scope: '<<cc_scopes>>' },
    });
    // One token for both steps, and the same one the API's workers would get (one cache for all).
    expect((idp.tokenRequests.client_credentials ?? 0) - before).toBe(1);
    const { accessToken } = await oauth.accessToken('cc', 'prod');
    expect((idp.tokenRequests.client_credentials ?? 0) - before).toBe(1);

    const record = await recordOf('cc-1');
    // The termination message is what the operator copies into the ToolRun's status.
    for (const seen of [record, JSON.stringify(summary), output]) {
      expect(seen).not.toContain(accessToken);
      expect(seen).not.toContain(CC_CLIENT.secret);
    }
    // Only the access-token route answers with it (the order carries the system's client credentials).
    expect(answers.join('\n')).not.toContain(accessToken);
  });

  it('a token the target refuses mid-run is replaced once (the runner names it by its hash)', async () => {
    await oauth.accessToken('cc', 'prod');
    await idp.revokeAccessTokens();
    const before = idp.tokenRequests.client_credentials ?? 0;
    const rejectedBefore = idp.apiCalls.rejected;
    const token = await api.startRun('cc-revoked', whoami('cc'), { systemIds: ['cc'] });
    const { code, output } = await runner('cc-revoked', token);
    expect(code, output).toBe(0);
    expect(idp.apiCalls.rejected - rejectedBefore).toBe(1);
    expect((idp.tokenRequests.client_credentials ?? 0) - before).toBe(1);
  });

  it('a system that needs authorization fails the step with the API message naming the authorize route', async () => {
    const token = await api.startRun('ac-1', whoami('ac'), { systemIds: ['ac'] });
    const { code, summary } = await runner('ac-1', token);
    expect(code).toBe(1);
    expect(summary?.error).toContain("System 'ac' (prod) uses the authorization-code grant");
    expect(summary?.error).toContain('/v1/systems/ac/oauth/authorize?environment=prod');
    expect(summary?.error).not.toContain('/internal/');
  });
});

describe('the access-token route', () => {
  const ask = (runId: string, token: string, body: object) =>
    fetch(`${api.url}${INTERNAL_PATHS.accessToken(runId)}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('answers a running run the token of a system its tool uses, not to be cached', async () => {
    const token = await api.startRun('route-ok', whoami('cc'), { systemIds: ['cc'] });
    const response = await ask('route-ok', token, { attempt: 1, systemId: 'cc' });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as { accessToken: string; expiresAt: number };
    expect(body.accessToken).toBe((await oauth.accessToken('cc', 'prod')).accessToken);
    expect(body.expiresAt).toBeGreaterThan(Date.now());

    // Naming it as refused gets another token, which the API's workers then get too.
    const before = idp.tokenRequests.client_credentials ?? 0;
    const replaced = await ask('route-ok', token, {
      attempt: 1,
      systemId: 'cc',
      rejectedSha256: accessTokenHash(body.accessToken),
    });
    const next = (await replaced.json()) as { accessToken: string };
    expect(next.accessToken).not.toBe(body.accessToken);
    expect((await oauth.accessToken('cc', 'prod')).accessToken).toBe(next.accessToken);
    expect((idp.tokenRequests.client_credentials ?? 0) - before).toBe(1);
  });

  it('refuses systems the run does not use, other runs, ended runs and other attempts', async () => {
    const token = await api.startRun('route-ac', whoami('ac'), { systemIds: ['ac'] });
    const other = await ask('route-ac', token, { attempt: 1, systemId: 'cc' });
    expect(other.status).toBe(403);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe(
      'KG_ERR_RUN_SYSTEM_NOT_USED',
    );

    const second = await api.startRun('route-other', whoami('cc'), { systemIds: ['cc'] });
    expect((await ask('route-ac', second, { attempt: 1, systemId: 'cc' })).status).toBe(403);
    expect((await ask('route-other', second, { attempt: 2, systemId: 'cc' })).status).toBe(409);
    expect((await ask('route-other', 'not-a-token', { attempt: 1, systemId: 'cc' })).status).toBe(401);

    await store.abortRun('route-other', { error: 'cancelled', completedAt: new Date().toISOString() });
    expect((await ask('route-other', second, { attempt: 1, systemId: 'cc' })).status).toBe(401);
  });
});
