import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type EmbeddedApp, startEmbedded } from '../../../bin/embedded.ts';
import { loadSettings } from '../../../config/config.ts';
import { type DocSite, startDocSite } from '../../support/doc-site.ts';
import { TEST_ADMIN_KEY, testServerEnv } from '../../support/embedded.ts';

let site: DocSite;
let dataDir: string;

beforeAll(async () => {
  site = await startDocSite();
  dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-docs-restart-'));
});

afterAll(async () => {
  await site?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

function start(): Promise<EmbeddedApp> {
  const config = loadSettings('embedded', testServerEnv(dataDir, { KUBEGLUE_SHUTDOWN_GRACE_MS: '1000' }));
  return startEmbedded(config, () => {});
}

it('resumes documentation work a process left pending when it died', async () => {
  const first = await start();
  const headers = { authorization: `Bearer ${TEST_ADMIN_KEY}`, 'content-type': 'application/json' };
  const created = await fetch(`${first.url}/v1/systems`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ id: 'resumed', url: `${site.url}/api` }),
  });
  expect(created.status).toBe(201);
  // What a process that crashed mid-processing leaves behind: a pending request it claimed, with a lease
  // that has run out, and nobody working on it.
  const key = { systemId: 'resumed', environment: 'prod' };
  await first.store.documentation.request({
    ...key,
    requestId: 'crashed-request',
    source: `${site.url}/docs/openapi.yaml`,
    requestedAt: new Date().toISOString(),
  });
  const claimed = await first.store.documentation.claim(key, {
    requestId: 'crashed-request',
    now: new Date().toISOString(),
    leaseUntil: new Date(Date.now() - 1).toISOString(),
  });
  expect(claimed?.attempts).toBe(1);
  await first.close();

  const second = await start();
  try {
    const deadline = Date.now() + 20_000;
    let state: { status: string; error?: string } | undefined;
    while (Date.now() < deadline) {
      const answer = await fetch(`${second.url}/v1/systems/resumed`, { headers });
      state = ((await answer.json()) as { data: { documentation?: { status: string } } }).data.documentation;
      if (state && state.status !== 'pending') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(state).toMatchObject({ status: 'ready', source: `${site.url}/docs/openapi.yaml` });
    const placement = await fetch(`${second.url}/v1/systems/resumed/documentation?format=text`, { headers });
    expect(await placement.text()).toContain('GET /items - List inventory items');
  } finally {
    await second.close();
  }
});
