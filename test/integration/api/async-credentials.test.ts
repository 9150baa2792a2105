import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const target = useHttpTarget();
const api = useTestApi({ KUBEGLUE_MAX_ASYNC_RUNS: '1' });
let held: ServerResponse[] = [];

beforeAll(async () => {
  held = target.hold('/hold');
  target.route('GET', '/whoami', (req) => ({ body: { auth: req.headers.authorization ?? null } }));
  // One async run at a time: a second one waits, queued, with its credentials not read yet.
  await api.call('POST', '/v1/systems', { body: { id: 'crm', url: target.url, authType: 'bearer' } });
  await api.call('POST', '/v1/tools', {
    body: { id: 'block', steps: [{ id: 'w', config: { url: `${target.url}/hold` } }] },
  });
  await api.call('POST', '/v1/tools', {
    body: { id: 'whoami', steps: [{ id: 'w', config: { url: '/whoami', systemId: 'crm' } }] },
  });
});
afterAll(async () => {
  for (const res of held) res.destroy();
});

describe('runtime credentials of a queued async run', () => {
  it('are not replaced by a conflicting request that reuses its runId', async () => {
    await api.call('POST', '/v1/tools/block/run', { body: { options: { async: true } } });
    await expect.poll(() => held.length, { timeout: 10_000 }).toBe(1);
    /** An async run `creds-x` of whoami with input n and the system's bearer token given at run time. */
    const whoami = (n: number, token: string) =>
      api.call('POST', '/v1/tools/whoami/run', {
        body: {
          runId: 'creds-x',
          inputs: { n },
          credentials: { crm_bearerToken: token },
          options: { async: true },
        },
      });
    expect((await whoami(1, 'first-token')).status).toBe(202);
    expect((await whoami(2, 'other-token')).status).toBe(409);
    (held[0] as ServerResponse).end('"done"');
    await waitForRun(api, 'creds-x');
    const results = await api.call<{ data: { data: { auth: string } } }>('GET', '/v1/runs/creds-x/results');
    expect(results.body.data.data.auth).toBe('Bearer <<crm_bearerToken>>');
    expect(target.requests.find((r) => r.path === '/whoami')?.headers.authorization).toBe(
      'Bearer first-token',
    );
  });
});
