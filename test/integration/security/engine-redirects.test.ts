/**
 * Issue 7, item 4: credentials do not follow a redirect to another origin, whichever header or query
 * parameter carries them. `api` redirects, `other` (another port: another origin) records what it gets.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ResolvedSystem } from '../../../contract/wire/run-order.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { useTestEngine } from '../../support/security-engine.ts';

const api = useHttpTarget({ resetBeforeEach: true });
const other = useHttpTarget({ resetBeforeEach: true });
const engine = useTestEngine();

beforeAll(async () => {
  other.route('*', '/landing', (req) => ({ body: { method: req.method, body: req.text } }));
  api.route('*', '/landing', (req) => ({ body: { method: req.method, body: req.text } }));
});

const KEY = 'ak-live-0123456789abcdef';

function redirectTo(path: string, location: () => string, status = 302): void {
  api.route('*', path, () => ({ status, headers: { location: location() } }));
}

describe('a redirect to another origin', () => {
  it('drops an API-key header and keeps it on the same origin', async () => {
    redirectTo('/away', () => `${other.url}/landing`);
    redirectTo('/stay', () => '/landing');
    const system: ResolvedSystem = {
      id: 'svc',
      url: api.url,
      authType: 'apiKey',
      credentials: { apiKey: KEY, apiKeyHeader: 'X-Api-Key' },
    };
    const result = await engine.run(
      {
        steps: [
          { id: 'away', config: { url: '/away', systemId: 'svc' } },
          { id: 'stay', config: { url: '/stay', systemId: 'svc' } },
        ],
      },
      { systems: [system] },
    );
    expect(result.status).toBe('success');
    expect(other.requests).toHaveLength(1);
    expect(other.requests[0]?.headers['x-api-key']).toBeUndefined();
    expect(JSON.stringify(other.requests[0]?.headers)).not.toContain(KEY);
    const landed = api.requests.find((r) => r.path === '/landing');
    expect(landed?.headers['x-api-key']).toBe(KEY);
  });

  it('drops customHeaders credentials and headers whose value carries a credential', async () => {
    redirectTo('/away', () => `${other.url}/landing`);
    const system: ResolvedSystem = {
      id: 'svc',
      url: api.url,
      authType: 'customHeaders',
      credentials: { 'X-Tenant-Secret': 'tenant-secret-987', 'X-Account': 'acct-secret-555' },
    };
    await engine.run(
      {
        steps: [
          {
            id: 'away',
            config: {
              url: '/away',
              systemId: 'svc',
              headers: { 'X-Signed': 'sig <<svc_X-Account>>', Accept: 'application/json' },
            },
          },
        ],
      },
      { systems: [system] },
    );
    const headers = other.requests[0]?.headers ?? {};
    expect(headers['x-tenant-secret']).toBeUndefined();
    expect(headers['x-account']).toBeUndefined();
    expect(headers['x-signed']).toBeUndefined();
    expect(headers.accept).toBe('application/json');
  });

  it('drops the API-key query parameter even when the Location repeats it', async () => {
    redirectTo('/away', () => `${other.url}/landing?api_token=${KEY}&page=2&sig=server-made`);
    const system: ResolvedSystem = {
      id: 'svc',
      url: api.url,
      authType: 'apiKey',
      credentials: { apiKey: KEY, apiKeyQueryParam: 'api_token' },
    };
    await engine.run(
      { steps: [{ id: 'away', config: { url: '/away', systemId: 'svc' } }] },
      { systems: [system] },
    );
    expect(api.requests[0]?.query).toEqual([['api_token', KEY]]);
    // The server's own parameters (a presigned link's signature) stay.
    expect(other.requests[0]?.query).toEqual([
      ['page', '2'],
      ['sig', 'server-made'],
    ]);
  });
});

describe('a 307/308 to another origin', () => {
  it('is not followed when it would re-send a body that carries a credential', async () => {
    redirectTo('/post-away', () => `${other.url}/landing`, 307);
    const system: ResolvedSystem = { id: 'svc', url: api.url, credentials: { apiKey: KEY } };
    const result = await engine.run(
      {
        steps: [
          {
            id: 'post',
            config: { url: '/post-away', systemId: 'svc', method: 'POST', body: { key: '<<svc_apiKey>>' } },
          },
        ],
      },
      { systems: [system] },
    );
    expect(result.stepResults[0]?.error).toBe(
      `HTTP POST ${api.url}/post-away failed: the 307 redirect to ${other.url} would re-send a body that carries a credential; not followed`,
    );
    expect(other.requests).toHaveLength(0);
  });
});

describe('redirect semantics', () => {
  it('turns a POST into a GET without body on 303, keeps method and body on 307, resolves relative Locations', async () => {
    redirectTo('/see-other', () => '/landing', 303);
    redirectTo('/temporary', () => 'landing', 307);
    const result = await engine.run({
      steps: [
        { id: 'a', config: { url: `${api.url}/see-other`, method: 'POST', body: { n: 1 } } },
        { id: 'b', config: { url: `${api.url}/temporary`, method: 'POST', body: { n: 2 } } },
      ],
    });
    expect(result.stepResults.map((r) => r.data)).toEqual([
      { method: 'GET', body: '' },
      { method: 'POST', body: '{"n":2}' },
    ]);
  });

  it('stops after 5 redirects', async () => {
    api.route('GET', '/loop', { status: 302, headers: { location: '/loop' } });
    const result = await engine.run({ steps: [{ id: 'l', config: { url: `${api.url}/loop` } }] });
    expect(result.stepResults[0]?.error).toBe(`HTTP GET ${api.url}/loop failed: more than 5 redirects`);
    expect(api.count('/loop')).toBe(6);
  });
});
