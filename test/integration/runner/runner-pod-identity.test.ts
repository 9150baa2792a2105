/**
 * Outbound identity on the runner Pod path: `kubeglue runner` holds only its per-run token, so it asks the
 * internal API for each identity token (`POST …/identity-token`), which signs it with the installation's key.
 * A real HTTP target verifies the token with jose against the issuer's JWKS; the runner's output, the stored
 * step results and the termination message never hold it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdentityIssuer } from '../../../runs/identity/issuer.ts';
import type { Store } from '../../../store/index.ts';
import { TEST_MASTER_KEY } from '../../support/embedded.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { createInternalApi, type InternalApiHarness } from '../../support/internal-api.ts';
import { startRunnerProcess } from '../../support/runner-process.ts';
import { openTestStore } from '../../support/store.ts';

const ISSUER = 'https://kubeglue.example.com';

let store: Store;
let closeStore: () => Promise<void>;
let api: InternalApiHarness;
let issuer: IdentityIssuer;
let dir: string;
const target = useHttpTarget();
const received: string[] = [];

beforeAll(async () => {
  ({ store, close: closeStore } = await openTestStore('sqlite'));
  dir = await mkdtemp(join(tmpdir(), 'kubeglue-runner-identity-'));
  issuer = new IdentityIssuer({
    keys: store.identityKeys,
    masterKey: Buffer.from(TEST_MASTER_KEY, 'hex'),
    issuer: ISSUER,
    tokenTtlMs: 120_000,
    rotation: { everyMs: 0, aheadMs: 0 },
  });
  api = createInternalApi(store, { identityToken: (run, audience) => issuer.forRun(run)(audience) });
  await api.listen();
  target.route('GET', '/verify', async (req) => {
    const token = /^Bearer (.+)$/.exec(String(req.headers.authorization))?.[1] ?? '';
    received.push(token);
    const { payload } = await jwtVerify(token, createLocalJWKSet(await issuer.jwks()), {
      issuer: ISSUER,
      audience: target.url,
    });
    return { body: payload };
  });
});

afterAll(async () => {
  await api?.close();
  await closeStore?.();
  await rm(dir, { recursive: true, force: true });
});

describe('runner pod identity tokens', () => {
  it("sends a token the target verifies, for the run and the target's origin, and keeps it out of what it reports", async () => {
    const tool = {
      id: 'pod-identity',
      steps: [
        {
          id: 'verify',
          config: { url: `${target.url}/verify`, headers: { Authorization: 'Bearer <<sg_auth_jwt>>' } },
        },
      ],
    };
    const token = await api.startRun('pod-identity-run', tool);
    const exit = await startRunnerProcess({ url: api.url, runId: 'pod-identity-run', token, dir }).exited;
    expect(exit.code, exit.output).toBe(0);
    const run = await store.getRun('pod-identity-run');
    expect(run?.status, run?.error).toBe('success');
    const steps = await store.getStepResults('pod-identity-run');
    expect(steps[0]?.data).toMatchObject({
      iss: ISSUER,
      aud: target.url,
      run_id: 'pod-identity-run',
      tool_id: 'pod-identity',
      request_source: 'api',
    });
    expect(received).toHaveLength(1);
    const sent = received[0] as string;
    expect(JSON.stringify(steps)).not.toContain(sent);
    expect(exit.output).not.toContain(sent);
    expect(JSON.stringify(exit.summary)).not.toContain(sent);
  });
});
