/**
 * The progress of documentation processing as every client reads it on GET /v1/systems/{id}: whether an
 * attempt is under way (processing), how many were made of how many allowed, and when a failed one is
 * retried (retryAt), as fields rather than inside the error text.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DocumentationState } from '../../../contract/api/system.ts';
import { useTestApi } from '../../support/embedded.ts';

const MAX_FAILURES = 4;
const RETRY_DELAY_MS = 1_500;
const api = useTestApi({
  KUBEGLUE_JOB_MAX_FAILURES: String(MAX_FAILURES),
  KUBEGLUE_JOB_RETRY_DELAY_MS: String(RETRY_DELAY_MS),
});

let site: Server;
let siteUrl: string;
/** Requests for /held wait here until released. */
const held: ServerResponse[] = [];
let flakyRequests = 0;

const MARKDOWN = '# Inventory API\n\nSend the key in the X-Api-Key header.\n';

beforeAll(async () => {
  site = createServer((request, response) => {
    if (request.url === '/held') {
      held.push(response);
      return;
    }
    if (request.url === '/flaky' && ++flakyRequests === 1) {
      response.writeHead(503, { 'content-type': 'text/plain' });
      response.end('down for maintenance');
      return;
    }
    response.writeHead(200, { 'content-type': 'text/markdown' });
    response.end(MARKDOWN);
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const response of held) response.destroy();
  await new Promise<void>((resolve) => site.close(() => resolve()));
});

/** Polls the system until its documentation state satisfies `done`. */
async function stateWhen(
  systemId: string,
  done: (state: DocumentationState) => boolean,
): Promise<DocumentationState> {
  const deadline = Date.now() + 20_000;
  let last: DocumentationState | undefined;
  for (;;) {
    const answer = await api.call<{ data: { documentation?: DocumentationState } }>(
      'GET',
      `/v1/systems/${systemId}`,
    );
    last = answer.body.data.documentation;
    if (last && done(last)) return last;
    if (Date.now() > deadline)
      throw new Error(`the documentation of ${systemId} stays ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function systemWithDocs(id: string, path: string): Promise<void> {
  const created = await api.call('POST', '/v1/systems', {
    body: { id, url: `${siteUrl}/api`, documentationUrl: `${siteUrl}${path}` },
  });
  expect(created.status, created.text).toBe(201);
}

it('shows an attempt under way as processing, with the attempts made and allowed', async () => {
  await systemWithDocs('held-docs', '/held');
  const running = await stateWhen('held-docs', (state) => state.processing);
  expect(running).toMatchObject({
    status: 'pending',
    processing: true,
    attempts: 1,
    maxAttempts: MAX_FAILURES,
  });
  expect(running.retryAt).toBeUndefined();

  for (const response of held.splice(0)) {
    response.writeHead(200, { 'content-type': 'text/markdown' });
    response.end(MARKDOWN);
  }
  const ready = await stateWhen('held-docs', (state) => state.status === 'ready');
  expect(ready).toMatchObject({ processing: false, attempts: 1, maxAttempts: MAX_FAILURES });
  expect(ready.retryAt).toBeUndefined();
});

it('shows a failed attempt waiting for its retry: not processing, retryAt, and why in error', async () => {
  const before = Date.now();
  await systemWithDocs('flaky-docs', '/flaky');
  const waiting = await stateWhen('flaky-docs', (state) => state.retryAt !== undefined);
  expect(waiting).toMatchObject({
    status: 'pending',
    processing: false,
    attempts: 1,
    maxAttempts: MAX_FAILURES,
  });
  expect(waiting.error).toContain('answered HTTP 503');
  const retryAt = Date.parse(waiting.retryAt as string);
  expect(retryAt).toBeGreaterThanOrEqual(before + RETRY_DELAY_MS);
  expect(retryAt).toBeLessThan(Date.now() + RETRY_DELAY_MS + 1_000);

  // The list shows the same state.
  const listed = await api.call<{ data: { id: string; documentation?: DocumentationState }[] }>(
    'GET',
    '/v1/systems',
  );
  expect(listed.body.data.find((system) => system.id === 'flaky-docs')?.documentation).toMatchObject({
    retryAt: waiting.retryAt,
    attempts: 1,
  });

  const ready = await stateWhen('flaky-docs', (state) => state.status === 'ready');
  expect(ready).toMatchObject({ processing: false, attempts: 2 });
  expect(ready.retryAt).toBeUndefined();
  expect(ready.error).toBeUndefined();
});
