/**
 * A documentation URL that answers an error or a redirect: the server (`kubeglue embedded`, a process of
 * its own, as users run it) stays up and answers, and the system's documentation status says what went
 * wrong, also when the fetch was still pending when the server restarted.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TEST_ADMIN_KEY, testServerEnv } from '../../support/embedded.ts';
import { type KubeglueProcess, startKubeglue, waitUntil } from '../../support/kube/kubeglue.ts';

const MAX_FAILURES = 3;

interface DocumentationState {
  status: 'pending' | 'ready' | 'failed';
  error?: string;
  attempts: number;
}

let site: Server;
let siteUrl: string;
/** Requests for /held wait here while `holding`; then /held redirects to /missing. */
const held: ServerResponse[] = [];
let holding = true;
/** Requests for /unavailable, which answers 503 until `recovered`. */
let unavailableRequests = 0;
let recovered = false;
/** Requests for /to-metadata, which redirects to the cloud metadata address. */
let metadataRedirects = 0;
const METADATA = '169.254.169.254';
let dataDir: string;
let server: KubeglueProcess | undefined;
let serverUrl: string;

beforeAll(async () => {
  site = createServer((request, response) => {
    if (request.url === '/to-metadata') {
      metadataRedirects += 1;
      response.writeHead(302, { location: `http://${METADATA}/latest/meta-data/` });
      response.end();
    } else if (request.url === '/moved') {
      response.writeHead(302, { location: '/missing', 'content-type': 'text/html' });
      response.end('<a href="/missing">moved</a>');
    } else if (request.url === '/unavailable' && !recovered) {
      unavailableRequests += 1;
      response.writeHead(503, { 'content-type': 'text/plain' });
      response.end('down for maintenance');
    } else if (request.url === '/unavailable') {
      response.writeHead(200, { 'content-type': 'text/markdown' });
      response.end('# Inventory API\n\nSend the key in the X-Api-Key header.\n');
    } else if (request.url === '/held' && holding) {
      held.push(response);
    } else if (request.url === '/held') {
      response.writeHead(302, { location: '/missing' });
      response.end();
    } else {
      response.writeHead(404, { 'content-type': 'text/html' });
      response.end('<html><body>not found</body></html>');
    }
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-docs-errors-'));
});

afterAll(async () => {
  await server?.stop();
  for (const response of held) response.destroy();
  await new Promise<void>((resolve) => site.close(() => resolve()));
  await rm(dataDir, { recursive: true, force: true });
});

/** Starts the server unless it runs (each test starts one if an earlier test left none). */
async function startServer(): Promise<void> {
  if (server && server.child.exitCode === null && server.child.signalCode === null) return;
  server = startKubeglue(
    'embedded',
    testServerEnv(dataDir, {
      KUBEGLUE_HOST: '127.0.0.1',
      KUBEGLUE_SHUTDOWN_GRACE_MS: '1000',
      KUBEGLUE_JOB_MAX_FAILURES: String(MAX_FAILURES),
      KUBEGLUE_JOB_RETRY_DELAY_MS: '20',
    }),
  );
  await server.waitForOutput(/ready on http:\/\/\S+ /);
  serverUrl = /ready on (http:\/\/\S+) /.exec(server.output())?.[1] as string;
}

async function call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(`${serverUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${TEST_ADMIN_KEY}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as T };
}

/** Polls the system until its documentation is no longer pending; fails at once if the server died. */
async function settled(systemId: string): Promise<DocumentationState> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (server?.child.exitCode !== null || server.child.signalCode !== null)
      throw new Error(`the server exited:\n${server?.output()}`);
    const answer = await call<{ data: { documentation?: DocumentationState } }>(
      'GET',
      `/v1/systems/${systemId}`,
    );
    const state = answer.body.data.documentation;
    if (state && state.status !== 'pending') return state;
    if (Date.now() > deadline)
      throw new Error(
        `the documentation of ${systemId} is still ${JSON.stringify(state)}:\n${server.output()}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The server still runs and answers. */
async function expectAlive(): Promise<void> {
  expect(server?.child.exitCode, server?.output()).toBeNull();
  const health = await fetch(`${serverUrl}/healthz`);
  expect(health.status).toBe(200);
  expect(server?.output()).not.toMatch(/Unhandled|RequestAbortedError|uncaught/i);
}

/** Starts the server unless it runs and creates system `id` with its documentation at `${siteUrl}${path}`. */
async function systemWithDocs(id: string, path: string): Promise<void> {
  await startServer();
  const created = await call('POST', '/v1/systems', {
    id,
    url: `${siteUrl}/api`,
    documentationUrl: `${siteUrl}${path}`,
  });
  expect(created.status).toBe(201);
}

/** The documentation of `id` failed on the page that answers 404, and the server is still up. */
async function failedOnMissingPage(id: string): Promise<void> {
  const state = await settled(id);
  expect(state).toMatchObject({ status: 'failed', error: `fetching ${siteUrl}/missing answered HTTP 404` });
  await expectAlive();
}

it('stays up when a documentation URL answers 404, and shows the error on the system', async () => {
  await systemWithDocs('missing-docs', '/missing');
  await failedOnMissingPage('missing-docs');
});

it('stays up when a documentation URL redirects to a page that answers 404', async () => {
  await systemWithDocs('moved-docs', '/moved');
  await failedOnMissingPage('moved-docs');
});

it('stays up after a restart with that fetch still pending', async () => {
  await systemWithDocs('held-docs', '/held');
  // The fetch is under way when the server stops: its request stays pending for the next process.
  await waitUntil(() => held.length > 0, 20_000, 'the documentation fetch to arrive');
  expect(await server?.stop()).toBe(0);
  server = undefined;
  for (const response of held.splice(0)) response.destroy();
  holding = false;

  await startServer();
  await failedOnMissingPage('held-docs');
});

it('retries a documentation URL that answers 503, gives up after KUBEGLUE_JOB_MAX_FAILURES, and shows why', async () => {
  await systemWithDocs('unavailable-docs', '/unavailable');
  const state = await settled('unavailable-docs');
  expect(state).toEqual(
    expect.objectContaining({
      status: 'failed',
      error:
        `processing failed ${MAX_FAILURES} times in a row (KUBEGLUE_JOB_MAX_FAILURES), the last time: ` +
        `fetching ${siteUrl}/unavailable answered HTTP 503. Update the system or upload the file again to retry`,
    }),
  );
  expect(unavailableRequests).toBe(MAX_FAILURES);
  await expectAlive();

  // Given up: nothing asks the site again until a user acts.
  await call('GET', '/v1/systems');
  expect(unavailableRequests).toBe(MAX_FAILURES);
  recovered = true;
  const updated = await call('PUT', '/v1/systems/unavailable-docs', {
    documentationUrl: `${siteUrl}/unavailable`,
  });
  expect(updated.status).toBe(200);
  expect(await settled('unavailable-docs')).toMatchObject({ status: 'ready' });
});

it('fails at once, never retrying, when the egress guard refuses the documentation URL (the metadata address)', async () => {
  await startServer();
  const created = await call('POST', '/v1/systems', {
    id: 'metadata-docs',
    url: `${siteUrl}/api`,
    documentationUrl: `http://${METADATA}/latest/meta-data/`,
  });
  expect(created.status).toBe(201);
  const refusal = `fetching http://${METADATA}/latest/meta-data/: refused to connect to ${METADATA}: the cloud metadata address`;
  expect(await settled('metadata-docs')).toMatchObject({ status: 'failed', error: refusal, attempts: 1 });

  // A documentation site that redirects there is refused the same way, after one request to the site.
  await systemWithDocs('redirected-docs', '/to-metadata');
  expect(await settled('redirected-docs')).toMatchObject({
    status: 'failed',
    error: refusal,
    attempts: 1,
  });
  expect(metadataRedirects).toBe(1);
  await expectAlive();
});
