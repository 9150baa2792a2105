/**
 * Issue 7, item 2: runtime credentials of queued async runs live in a place of their own, keyed by the
 * exact run id: no run id can reach a system's credentials or another run's, and only the request whose
 * run was stored gets its credentials stored.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApi, waitForRun } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';

const SYSTEM_TOKEN = 'system-token-5e1f0a77';

const target = useHttpTarget();
const api = useTestApi({ KUBEGLUE_MAX_ASYNC_RUNS: '1' });
let held: ServerResponse[] = [];

type Results = { data: { data: { auth: string | null } } };

beforeAll(async () => {
  held = target.hold('/hold');
  target.route('GET', '/whoami', (req) => ({ body: { auth: req.headers.authorization ?? null } }));
  // One async run at a time: runs queued behind the blocker wait with their credentials not read yet.
  const calls = [
    api.call('POST', '/v1/systems', { body: { id: 'crm', url: target.url, authType: 'bearer' } }),
    // Its credentials Secret is `run-reports-prod-credentials`: the name run id `reports-prod` used to get.
    api.call('POST', '/v1/systems', {
      body: {
        id: 'run-reports',
        url: target.url,
        authType: 'bearer',
        credentials: { bearerToken: SYSTEM_TOKEN },
      },
    }),
    api.call('POST', '/v1/tools', {
      body: { id: 'block', steps: [{ id: 'w', config: { url: `${target.url}/hold` } }] },
    }),
    api.call('POST', '/v1/tools', {
      body: { id: 'whoami', steps: [{ id: 'w', config: { url: '/whoami', systemId: 'crm' } }] },
    }),
    api.call('POST', '/v1/tools', {
      body: { id: 'reports', steps: [{ id: 'w', config: { url: '/whoami', systemId: 'run-reports' } }] },
    }),
  ];
  for (const answer of await Promise.all(calls)) expect(answer.status).toBe(201);
});
afterAll(async () => {
  for (const res of held) res.destroy();
});

/** Occupies the only async slot until release() is called. */
async function blockAsyncRuns(): Promise<() => void> {
  const before = held.length;
  await api.call('POST', '/v1/tools/block/run', { body: { options: { async: true } } });
  await expect.poll(() => held.length, { timeout: 10_000 }).toBe(before + 1);
  const res = held[before] as ServerResponse;
  return () => res.end('"done"');
}

function queue(runId: string, token: string | undefined, inputs: Record<string, unknown> = {}) {
  return api.call<{ runId: string }>('POST', '/v1/tools/whoami/run', {
    body: {
      runId,
      inputs,
      ...(token ? { credentials: { crm_bearerToken: token } } : {}),
      options: { async: true },
    },
  });
}

const authSeenBy = async (runId: string) =>
  (await api.call<Results>('GET', `/v1/runs/${encodeURIComponent(runId)}/results`)).body.data.data.auth;

describe('runtime credentials of queued async runs', () => {
  it("cannot read or delete a system's stored credentials through a chosen run id", async () => {
    const release = await blockAsyncRuns();
    // Without credentials of its own, this run used to receive (and then delete) system run-reports' ones.
    expect((await queue('reports-prod', undefined)).status).toBe(202);
    release();
    const run = await waitForRun<{ status: string }>(api, 'reports-prod');
    expect(run.status).toBe('success');
    expect(await authSeenBy('reports-prod')).toBeNull();

    const system = await api.call<{ data: { credentials?: Record<string, string> } }>(
      'GET',
      '/v1/systems/run-reports',
    );
    expect(system.body.data.credentials).toEqual({ bearerToken: '<<run-reports_bearerToken>>' });
    const used = await api.call<{ runId: string }>('POST', '/v1/tools/reports/run', { body: {} });
    expect(used.status).toBe(200);
    expect(await authSeenBy(used.body.runId)).toBe('Bearer <<run-reports_bearerToken>>');
    expect(target.requests.at(-1)?.headers.authorization).toBe(`Bearer ${SYSTEM_TOKEN}`);
  });

  it('keeps run ids that differ only in case or punctuation apart', async () => {
    const release = await blockAsyncRuns();
    const ids = { 'Job.1': 'token-of-dot', 'job:1': 'token-of-colon', 'JOB-1': 'token-of-dash' };
    for (const [runId, token] of Object.entries(ids)) expect((await queue(runId, token)).status).toBe(202);
    release();
    for (const [runId, token] of Object.entries(ids)) {
      await waitForRun(api, runId);
      const request = target.requests.find(
        (r) => r.path === '/whoami' && r.headers.authorization === `Bearer ${token}`,
      );
      expect({ runId, sent: request?.headers.authorization }).toEqual({ runId, sent: `Bearer ${token}` });
    }
  });

  it('stores only the credentials of the request whose run was stored, when first requests race', async () => {
    const release = await blockAsyncRuns();
    const pairs = Array.from({ length: 6 }, (_, i) => `race-${i}`);
    const answers = await Promise.all(
      pairs.flatMap((runId) => [
        queue(runId, `${runId}-winner-or-loser-1`, { n: 1 }),
        queue(runId, `${runId}-winner-or-loser-2`, { n: 2 }),
      ]),
    );
    release();
    // Every run ends before anything is asserted, so a failure leaves no run behind for the next test.
    for (const runId of pairs) await waitForRun(api, runId);
    const outcomes = pairs.map((runId, index) => {
      const first = answers[index * 2]?.status;
      const second = answers[index * 2 + 1]?.status;
      const sent = target.requests
        .filter((r) => r.path === '/whoami')
        .map((r) => r.headers.authorization)
        .filter((auth) => auth?.includes(`${runId}-`));
      return { runId, statuses: [first, second].sort(), sent, winner: first === 202 ? 1 : 2 };
    });
    expect(outcomes).toEqual(
      outcomes.map(({ runId, winner }) => ({
        runId,
        statuses: [202, 409],
        sent: [`Bearer ${runId}-winner-or-loser-${winner}`],
        winner,
      })),
    );
  });

  it('keeps them sealed while the run waits and removes them once it ran or was cancelled', async () => {
    const release = await blockAsyncRuns();
    const store = api.embedded.store;
    try {
      expect((await queue('sealed-1', 'plain-token-4c2a91')).status).toBe(202);
      expect((await queue('cancelled-1', 'plain-token-77d0e3')).status).toBe(202);
      const sealed = await store.getRunCredentials('sealed-1');
      expect(sealed).toBeInstanceOf(Uint8Array);
      expect(Buffer.from(sealed as Uint8Array).toString('latin1')).not.toContain('plain-token');
      expect((await api.call('POST', '/v1/runs/cancelled-1/cancel')).status).toBe(200);
      expect(await store.getRunCredentials('cancelled-1')).toBeUndefined();
    } finally {
      release();
    }
    await waitForRun(api, 'sealed-1');
    expect(await authSeenBy('sealed-1')).toBe('Bearer <<crm_bearerToken>>');
    await expect.poll(() => store.getRunCredentials('sealed-1')).toBeUndefined();
    expect(api.bodies.join('\n')).not.toContain('plain-token');
  });
});
