/**
 * Two API processes on one Postgres (each its own store, worker pool and token service) share one OAuth
 * token cache: runs of the same system on both at once cause one token request, because the refresh lease
 * lives in the store and the process that does not hold it waits for the holder's token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../../support/database.ts';
import { startTestApi, type TestApi, useTestApi } from '../../support/embedded.ts';
import { useOAuthProvider } from '../../support/oauth-provider.ts';

const database = useTestDatabase();
const idp = useOAuthProvider({ redirectUris: [] });
const first = useTestApi(() => ({ KUBEGLUE_DATABASE_URL: database.url }));
let second: TestApi;

beforeAll(async () => {
  await first.call('POST', '/v1/systems', {
    body: idp.clientCredentialsSystem('shared', { scopes: 'api:read' }),
  });
  await first.call('POST', '/v1/tools', {
    body: { id: 'whoami', steps: [{ id: 'me', config: { url: '/api/whoami', systemId: 'shared' } }] },
  });
  // Started after the system and tool exist, so its caches hold them from the start.
  second = await startTestApi({ KUBEGLUE_DATABASE_URL: database.url });
}, 60_000);

afterAll(async () => {
  await second?.stop();
});

describe('two API processes on one Postgres', () => {
  it('runs of one OAuth system on both at once cause exactly one token request', async () => {
    const run = (api: TestApi) =>
      api.call<{ status: string; error?: string }>('POST', '/v1/tools/whoami/run', { body: {} });
    const runs = await Promise.all(Array.from({ length: 20 }, (_, i) => run(i % 2 === 0 ? first : second)));
    for (const r of runs) expect(r.body.status, r.body.error).toBe('success');
    expect(idp.tokenRequests.client_credentials ?? 0).toBe(1);
    expect(idp.apiCalls.ok).toBe(20);
    // Both answer the same status from the shared row.
    const views = await Promise.all(
      [first, second].map((api) =>
        api.call<{ data: { oauth: { status: string; expiresAt: string } } }>('GET', '/v1/systems/shared'),
      ),
    );
    expect(views[0]?.body.data.oauth.status).toBe('active');
    expect(views[1]?.body.data.oauth).toEqual(views[0]?.body.data.oauth);
  });
});
