/**
 * The dashboard's files as the API role serves them at `/`: index.html for the app's pages with a strict
 * Content-Security-Policy and no caching, hashed assets cached for good, and the API's own paths untouched
 * (JSON 404s for unknown ones, even when a browser asks); without a build, a page saying how to make one.
 */
import { describe, expect, it } from 'vitest';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';

const api = useTestApi();
const notBuilt = useTestApi({ KUBEGLUE_UI_DIR: '/nonexistent/kubeglue-ui' });

const BROWSER = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

async function get(base: string, path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}${path}`, { headers });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

function assetsOf(html: string): string[] {
  return [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => match[1] as string);
}

describe('the dashboard at /', () => {
  it('serves index.html with a strict Content-Security-Policy and no caching', async () => {
    const page = await get(api.url, '/', BROWSER);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const csp = page.headers.get('content-security-policy') ?? '';
    const directives = Object.fromEntries(
      csp.split(';').map((directive) => {
        const [name = '', ...values] = directive.trim().split(/\s+/);
        return [name, values.join(' ')];
      }),
    );
    expect(directives).toMatchObject({
      'default-src': "'self'",
      'script-src': "'self'",
      'style-src': "'self'",
      'connect-src': "'self'",
      'frame-ancestors': "'none'",
      'object-src': "'none'",
    });
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    // Nothing inline for the policy to block: every script and stylesheet is a file of this origin.
    expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(page.text).not.toMatch(/<style|\sstyle=/);
    expect(assetsOf(page.text)).toHaveLength(2);
  });

  it('serves the hashed assets compressed, with a year-long immutable cache', async () => {
    const index = await get(api.url, '/');
    for (const asset of assetsOf(index.text)) {
      expect(asset).toMatch(/-[A-Z0-9]{8}\.(js|css)$/);
      const answer = await get(api.url, asset, { 'accept-encoding': 'gzip, br' });
      expect(answer.status, asset).toBe(200);
      expect(answer.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(answer.headers.get('content-type')).toMatch(
        asset.endsWith('.js') ? /^text\/javascript/ : /^text\/css/,
      );
      expect(answer.headers.get('content-encoding')).toBe('br');
      expect(answer.text.length).toBeGreaterThan(1000);
    }
    const missing = await get(api.url, '/assets/main-NOTTHERE.js', BROWSER);
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.text)).toMatchObject({ error: { code: 'KG_ERR_ROUTE_NOT_FOUND' } });
  });

  it("answers a browser's navigation to a page of the app with index.html, and nothing else", async () => {
    const index = await get(api.url, '/');
    for (const path of ['/runs', '/runs/some-run%3A1', '/settings', '/a/page/the/app/does/not/have']) {
      const page = await get(api.url, path, BROWSER);
      expect(page.status, path).toBe(200);
      expect(page.text).toBe(index.text);
      expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    }
    // An API client (no text/html in Accept) still gets the API's JSON 404.
    const client = await get(api.url, '/runs', { accept: 'application/json' });
    expect(client.status).toBe(404);
    expect(JSON.parse(client.text)).toMatchObject({ error: { code: 'KG_ERR_ROUTE_NOT_FOUND' } });
    const post = await fetch(`${api.url}/runs`, { method: 'POST', headers: BROWSER });
    expect(post.status).toBe(404);
  });

  it("never shadows the API's own paths, even for a browser", async () => {
    const unknown = await get(api.url, '/v1/nope', { ...BROWSER, authorization: `Bearer ${TEST_ADMIN_KEY}` });
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.text)).toMatchObject({ error: { code: 'KG_ERR_ROUTE_NOT_FOUND' } });
    const runs = await get(api.url, '/v1/runs', BROWSER);
    expect(runs.status).toBe(401);
    expect(JSON.parse(runs.text)).toMatchObject({ error: { code: 'KG_ERR_MISSING_API_KEY' } });
    const mcp = await get(api.url, '/mcp', BROWSER);
    expect(mcp.headers.get('content-type')).not.toMatch(/html/);
    expect((await get(api.url, '/healthz', BROWSER)).text).toBe('{"status":"ok"}');
    expect((await get(api.url, '/v1/openapi.json', BROWSER)).headers.get('content-type')).toMatch(/json/);
  });

  it('says how to build the dashboard when it was not built', async () => {
    const page = await get(notBuilt.url, '/', BROWSER);
    expect(page.status).toBe(503);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain('npm run build');
    expect(page.text).not.toMatch(/<script/);
    // The API itself works as ever.
    expect((await notBuilt.call('GET', '/v1/me')).status).toBe(200);
  });
});
