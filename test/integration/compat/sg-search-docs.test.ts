/**
 * `sg system search-docs --system-id <id> --keywords <words>` (superglue-ai/cli 1.1.35) against kubeglue:
 * its bundled client's searchSystemDocumentation sends `POST /v1/systems/{id}/documentation/search` with
 * `{ keywords }` and returns the answer's `data`; the command then tells three cases apart by that string
 * (empty: no documentation; starting with "No relevant sections found": nothing matched; else the text to
 * print) and shows an HTTP error's `error.message`. Replayed here request for request, with the command's
 * decision on the string (its --json output) restated, not copied.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { type DocSite, startDocSite } from '../../support/doc-site.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { HttpError, SuperglueLikeClient } from '../../support/superglue-like-client.ts';

const api = useTestApi();
let site: DocSite;
let sg: SuperglueLikeClient;

beforeAll(async () => {
  site = await startDocSite();
  sg = new SuperglueLikeClient(api.url, TEST_ADMIN_KEY);
  const created = await api.call('POST', '/v1/systems', {
    body: { id: 'inventory', url: `${site.url}/api`, documentationUrl: `${site.url}/docs/index.html` },
  });
  expect(created.status).toBe(201);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { body } = await api.call<{ data: { documentation?: { status: string } } }>(
      'GET',
      '/v1/systems/inventory',
    );
    if (body.data.documentation?.status === 'ready') break;
    if (Date.now() > deadline) throw new Error('documentation not ready');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return () => site.stop();
});

/** The client's searchSystemDocumentation: the answer's `data`. */
async function searchSystemDocumentation(systemId: string, keywords: string): Promise<unknown> {
  const answer = await sg.request(
    'POST',
    `/v1/systems/${encodeURIComponent(systemId)}/documentation/search`,
    {
      keywords,
    },
  );
  return answer.data;
}

/** What `sg system search-docs --json` prints for the client's result. */
function searchDocsOutput(result: string, keywords: string): Record<string, unknown> {
  if (!result || result.trim().length === 0) {
    return { success: false, message: 'No documentation found for this system' };
  }
  if (result.startsWith('No relevant sections found')) {
    return { success: true, total: 0, message: result, keywords };
  }
  return { success: true, content: result, keywords };
}

async function searchDocs(systemId: string, keywords: string): Promise<Record<string, unknown>> {
  const result = await searchSystemDocumentation(systemId, keywords);
  // The command calls result.trim() and result.startsWith(): data must be a string.
  expect(typeof result).toBe('string');
  return searchDocsOutput(result as string, keywords);
}

describe('sg system search-docs', () => {
  it('prints the matching sections, each as a heading with where it came from', async () => {
    const output = await searchDocs('inventory', 'rotate api keys');
    expect(output).toMatchObject({ success: true, keywords: 'rotate api keys' });
    const content = output.content as string;
    expect(content).toMatch(/^## 1\. /);
    expect(content).toContain(
      `## 1. Rotation\nSource: ${site.url}/docs/auth.html\n\nKeys rotate every 90 days.`,
    );
    expect(content).toContain(`Source: ${site.url}/docs/openapi.yaml`);
  });

  it('reports "no relevant sections" when nothing matches', async () => {
    const output = await searchDocs('inventory', 'kubernetes helm');
    expect(output).toEqual({
      success: true,
      total: 0,
      message: expect.stringMatching(/^No relevant sections found for keywords: "kubernetes helm"/),
      keywords: 'kubernetes helm',
    });
  });

  it('reports "no documentation" for a system without any', async () => {
    await api.call('POST', '/v1/systems', { body: { id: 'bare', url: 'https://bare.example' } });
    expect(await searchDocs('bare', 'orders')).toEqual({
      success: false,
      message: 'No documentation found for this system',
    });
  });

  it('shows the error of an unknown system and of documentation still being processed', async () => {
    await expect(searchSystemDocumentation('nowhere', 'orders')).rejects.toEqual(
      new HttpError("system 'nowhere' not found", 404),
    );
    await api.call('POST', '/v1/systems', {
      body: { id: 'failing', url: 'https://f.example', documentationUrl: `${site.url}/docs/missing.html` },
    });
    const error = (await searchSystemDocumentation('failing', 'orders').catch(
      (e: unknown) => e,
    )) as HttpError;
    expect(error).toBeInstanceOf(HttpError);
    expect(error.status).toBe(409);
    expect(error.message).toMatch(/^the documentation of system 'failing' is (pending|failed)/);
  });
});
