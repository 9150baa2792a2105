/**
 * Outbound identity (docs/operations.md#outbound-identity): a request step that names
 * `<<kubeglue_identity_jwt>>` (or `<<sg_auth_jwt>>`) sends a JWT signed by kubeglue, whose audience is the
 * origin the request goes to. Real HTTP targets verify each token with jose against the JWKS the server
 * serves at /.well-known/jwks.json; the token never reaches another origin (a redirect included), and it is
 * in no answer, run record, recording or log line of the server.
 */
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, waitForRun } from '../../support/embedded.ts';
import { type TargetRequest, useHttpTarget } from '../../support/http-target.ts';

interface RunAnswer {
  runId: string;
  status: string;
  error?: string;
  data?: unknown;
  stepResults?: Array<{ stepId: string; success: boolean; error?: string; data?: unknown }>;
}

const BEARER = /^Bearer (.+)$/;

/** A request step to `url` sending `token` (a template) as its bearer token. */
function bearerStep(id: string, url: string, token = '<<kubeglue_identity_jwt>>') {
  return { id, config: { url, headers: { Authorization: `Bearer ${token}` } } };
}

describe('outbound identity tokens', () => {
  const target = useHttpTarget();
  const other = useHttpTarget();
  let api: TestApi;
  const logLines: string[] = [];
  /** Every token a target received, to look for in what the server answers and logs. */
  const seen = new Set<string>();

  function tokensOf(req: TargetRequest): string[] {
    const found: string[] = [];
    const header = BEARER.exec(String(req.headers.authorization ?? ''))?.[1];
    if (header) found.push(header);
    for (const [name, value] of req.query) if (name === 'jwt') found.push(value);
    const body = req.json as { identity?: unknown } | undefined;
    if (typeof body?.identity === 'string') found.push(body.identity);
    for (const token of found) seen.add(token);
    return found;
  }

  /** What a target does with a token: verifies it against the server's JWKS, for its own origin. */
  async function verified(token: string, origin: string) {
    const jwks = createRemoteJWKSet(new URL(`${api.url}/.well-known/jwks.json`));
    const { payload, protectedHeader } = await jwtVerify(token, jwks, {
      issuer: api.url,
      audience: origin,
      algorithms: ['ES256'],
    });
    return { payload, kid: protectedHeader.kid };
  }

  async function run(toolId: string, body: object = {}): Promise<RunAnswer> {
    const answer = await api.call<RunAnswer>('POST', `/v1/tools/${toolId}/run`, { body });
    expect(answer.status, answer.text).toBeLessThan(300);
    return answer.body;
  }

  async function saveTool(tool: object): Promise<void> {
    const saved = await api.call('POST', '/v1/tools', { body: tool });
    expect(saved.status, saved.text).toBe(201);
  }

  beforeAll(async () => {
    api = await startTestApi(
      { KUBEGLUE_LOG_LEVEL: 'debug', KUBEGLUE_REQUEST_LOG: 'true' },
      { log: (line, fields) => logLines.push(`${line} ${JSON.stringify(fields ?? {})}`) },
    );
    for (const server of [target, other]) {
      server.route('*', '/verify', async (req) => {
        const checks = [];
        for (const token of tokensOf(req)) checks.push(await verified(token, server.url));
        return { body: { checks: checks.map(({ payload, kid }) => ({ ...payload, kid })) } };
      });
    }
    target.route('GET', '/away', { status: 302, headers: { location: `${other.url}/verify` } });
    target.route('GET', '/refuse', (req) => ({ status: 400, body: { echoed: req.headers.authorization } }));
    target.route('GET', '/functions', (req) => ({ body: { seen: req.headers['x-seen'] ?? null } }));
    await saveTool({
      id: 'everywhere',
      steps: [
        {
          id: 'kubeglue',
          config: {
            url: `${target.url}/verify`,
            method: 'POST',
            headers: { Authorization: 'Bearer <<kubeglue_identity_jwt>>' },
            queryParams: { jwt: '<<kubeglue_identity_jwt>>' },
            body: { identity: '<<kubeglue_identity_jwt>>' },
          },
        },
        bearerStep('superglue', `${target.url}/verify`, '<<sg_auth_jwt>>'),
        bearerStep('elsewhere', `${other.url}/verify`),
      ],
    });
    await saveTool({
      id: 'redirected',
      steps: [
        {
          id: 'away',
          config: {
            url: `${target.url}/away`,
            headers: {
              Authorization: 'Bearer <<kubeglue_identity_jwt>>',
              'X-Caller-Identity': '<<sg_auth_jwt>>',
            },
          },
        },
      ],
    });
    await saveTool({ id: 'refused', steps: [bearerStep('refuse', `${target.url}/refuse`)] });
  });

  afterAll(async () => {
    await api?.stop();
  });

  it('sends a token each target verifies with the JWKS: signature, issuer, its own origin as audience, ≤ 5 min, the run', async () => {
    const answer = await run('everywhere', { runId: 'identity-sync', options: { record: true } });
    expect(answer.status, answer.error).toBe('success');
    const checks = answer.stepResults?.map((step) => (step.data as { checks: object[] }).checks);
    // kubeglue's name in a header, the query and the body; superglue's; and the other origin's own token.
    expect(checks?.map((list) => list.length)).toEqual([3, 1, 1]);
    const claims = {
      iss: api.url,
      run_id: 'identity-sync',
      tool_id: 'everywhere',
      request_source: 'api',
      key_id: expect.any(String),
      sub: expect.any(String),
      jti: expect.any(String),
    };
    for (const list of checks?.slice(0, 2) ?? []) {
      for (const check of list) expect(check).toMatchObject({ ...claims, aud: target.url });
    }
    expect(checks?.[2]?.[0]).toMatchObject({ ...claims, aud: other.url });
    for (const check of (checks ?? []).flat() as Array<{ iat: number; exp: number; kid: string }>) {
      expect(check.exp - check.iat).toBeGreaterThan(0);
      expect(check.exp - check.iat).toBeLessThanOrEqual(300);
      expect(check.kid).toEqual(expect.any(String));
    }
    // A token minted for one origin is not the one another origin gets.
    const byOrigin = new Map<string, Set<string>>();
    for (const [server, requests] of [
      [target.url, target.requests],
      [other.url, other.requests],
    ] as const) {
      for (const request of requests) {
        for (const token of tokensOf(request)) {
          expect(decodeJwt(token).aud).toBe(server);
          byOrigin.set(server, (byOrigin.get(server) ?? new Set()).add(token));
        }
      }
    }
    const targetTokens = [...(byOrigin.get(target.url) ?? [])];
    expect(targetTokens.length).toBeGreaterThan(0);
    for (const token of targetTokens) expect(byOrigin.get(other.url)?.has(token)).toBe(false);
  });

  it('drops the token on a redirect to another origin', async () => {
    other.reset();
    const answer = await run('redirected');
    expect(answer.status, answer.error).toBe('success');
    expect(other.requests).toHaveLength(1);
    expect(other.requests[0]?.headers.authorization).toBeUndefined();
    // A header of the step's own naming carries it too, and is dropped like a credential header.
    expect(other.requests[0]?.headers['x-caller-identity']).toBeUndefined();
    expect(target.requests.find((r) => r.path === '/away')?.headers['x-caller-identity']).toMatch(/^ey/);
    expect(answer.stepResults?.[0]?.data).toEqual({ checks: [] });
    expect(target.requests.filter((r) => r.path === '/away').flatMap(tokensOf)).toHaveLength(1);
  });

  it('is never shown to template functions, which see no such name', async () => {
    const answer = await api.call<RunAnswer>('POST', '/v1/tools/run', {
      body: {
        tool: {
          id: 'functions',
          steps: [
            {
              id: 'fn',
              config: {
                url: `${target.url}/functions`,
                headers: {
                  Authorization: 'Bearer <<kubeglue_identity_jwt>>',
                  'X-Seen': '<<(s) => String(s.kubeglue_identity_jwt) + String(s.sg_auth_jwt)>>',
                },
              },
            },
          ],
        },
      },
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.stepResults?.[0]?.data).toEqual({ seen: 'undefinedundefined' });
  });

  it('is refused by a step of another protocol, which never asks for one', async () => {
    const answer = await api.call<RunAnswer>('POST', '/v1/tools/run', {
      body: {
        tool: {
          id: 'not-http',
          steps: [
            {
              id: 'cache',
              config: {
                url: 'redis://127.0.0.1:1/0',
                body: { command: 'SET', args: ['caller', '<<kubeglue_identity_jwt>>'] },
              },
            },
          ],
        },
      },
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.status).toBe('failed');
    expect(answer.body.error).toContain('<<kubeglue_identity_jwt>> is sent in HTTP(S) requests only');
  });

  it('gets one in an async run in the worker pool', async () => {
    const started = await api.call<RunAnswer>('POST', '/v1/tools/everywhere/run', {
      body: { runId: 'identity-async', options: { async: true } },
    });
    expect(started.status, started.text).toBe(202);
    const done = await waitForRun<RunAnswer>(api, 'identity-async');
    expect(done.status, done.error).toBe('success');
    const results = await api.call<{ data: { stepResults: RunAnswer['stepResults'] } } | RunAnswer>(
      'GET',
      '/v1/runs/identity-async/results',
    );
    expect(results.status, results.text).toBe(200);
    expect(results.text).toContain('"run_id":"identity-async"');
    expect(results.text).toContain('"request_source":"api"');
  });

  it('is redacted from errors, run records, recordings and logs', async () => {
    const refused = await run('refused', { runId: 'identity-refused', options: { record: true } });
    expect(refused.status).toBe('failed');
    expect(refused.error).toContain('<<kubeglue_identity_jwt>>');
    const recording = await api.call('GET', '/v1/runs/identity-sync/recording');
    expect(recording.status, recording.text).toBe(200);
    // A header that carries a credential is recorded blanked; elsewhere the token reads as its name.
    expect(recording.text).toContain('"headers":{"Authorization":"<<redacted>>"}');
    expect(recording.text).toContain('"body":{"identity":"<<kubeglue_identity_jwt>>"}');
    for (const runId of ['identity-sync', 'identity-async', 'identity-refused']) {
      await api.call('GET', `/v1/runs/${runId}`);
      await api.call('GET', `/v1/runs/${runId}/results`);
    }
    await api.call('GET', '/v1/runs/identity-refused/recording');
    for (const request of [...target.requests, ...other.requests]) tokensOf(request);
    // One token per run and origin: two runs of `everywhere` to two origins, and the runs of one step.
    expect(seen.size).toBeGreaterThanOrEqual(7);
    const answered = api.bodies.join('\n');
    const logged = logLines.join('\n');
    expect(logged).toContain('identity-sync');
    for (const token of seen) {
      expect(answered).not.toContain(token);
      expect(logged).not.toContain(token);
      // Not even its signature alone (a log could cut the token).
      expect(answered).not.toContain(token.split('.')[2]);
    }
  });

  it('replays a recorded run that sent tokens without asking for one or calling anyone', async () => {
    const before = target.requests.length + other.requests.length;
    const answer = await api.call<{
      replay: { success: boolean };
      diff: { changed: boolean; steps: Array<{ stepId: string; status: string }> };
    }>('POST', '/v1/runs/identity-sync/replay', { body: {} });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.replay.success).toBe(true);
    expect(answer.body.diff.steps.map((step) => step.status)).toEqual([
      'unchanged',
      'unchanged',
      'unchanged',
    ]);
    expect(target.requests.length + other.requests.length).toBe(before);
  });

  it('serves the JWKS without a key, public keys only', async () => {
    const jwks = await api.call<{ keys: Array<Record<string, string>> }>('GET', '/.well-known/jwks.json', {
      key: null,
    });
    expect(jwks.status).toBe(200);
    expect(jwks.headers.get('content-type')).toContain('application/jwk-set+json');
    expect(jwks.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
    expect(jwks.body.keys).toHaveLength(1);
    expect(jwks.body.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(jwks.body.keys[0]).not.toHaveProperty('d');
    // Another well-known path is the API's unknown route, not the dashboard's page, even to a browser.
    const other = await api.call<{ error: { code: string } }>('GET', '/.well-known/openid-configuration', {
      key: null,
      headers: { accept: 'text/html' },
    });
    expect(other.status).toBe(404);
    expect(other.body.error.code).toBe('KG_ERR_ROUTE_NOT_FOUND');
  });
});

describe('outbound identity tokens across a key rotation', () => {
  const target = useHttpTarget();
  let api: TestApi;
  const received: string[] = [];

  beforeAll(async () => {
    // A key signs for 6 s and the next one is published 4 s before: a rotation within the test.
    api = await startTestApi({
      KUBEGLUE_IDENTITY_KEY_ROTATION: '6s',
      KUBEGLUE_IDENTITY_KEY_PUBLISH_AHEAD: '4s',
    });
    target.route('GET', '/token', (req) => {
      received.push(BEARER.exec(String(req.headers.authorization))?.[1] ?? '');
      return { body: {} };
    });
    const saved = await api.call('POST', '/v1/tools', {
      body: {
        id: 'token',
        steps: [bearerStep('send', `${target.url}/token`)],
      },
    });
    expect(saved.status, saved.text).toBe(201);
  });

  afterAll(async () => {
    await api?.stop();
  });

  /** Runs the tool once: the token the target got. */
  async function tokenOfARun(): Promise<string> {
    const answer = await api.call<RunAnswer>('POST', '/v1/tools/token/run', { body: {} });
    expect(answer.body.status, answer.text).toBe('success');
    return received.at(-1) as string;
  }
  const kidOf = (token: string) => decodeProtectedHeader(token).kid;
  /** Between two looks at a condition polled for. */
  const pollPause = () => new Promise((resolve) => setTimeout(resolve, 100));
  const servedKids = async () =>
    (
      await api.call<{ keys: Array<{ kid: string }> }>('GET', '/.well-known/jwks.json', { key: null })
    ).body.keys.map((key) => key.kid);

  it('rotates by its settings: new tokens carry the new kid, and a token signed before still verifies', async () => {
    const before = await tokenOfARun();
    const oldKid = kidOf(before);
    // The next key appears in the JWKS before it signs (that it does not sign yet is checked with a clock
    // moved by hand in identity-key-rotation.test.ts; here the settings are the server's).
    const deadline = Date.now() + 30_000;
    let kids = await servedKids();
    while (kids.length < 2 && Date.now() < deadline) {
      await pollPause();
      kids = await servedKids();
    }
    expect(kids).toContain(oldKid);
    const newKid = kids.find((kid) => kid !== oldKid);
    expect(newKid).toBeDefined();
    // Once it signs, new tokens carry its kid.
    let after = await tokenOfARun();
    while (kidOf(after) === oldKid && Date.now() < deadline) {
      await pollPause();
      after = await tokenOfARun();
    }
    // The new key, or (on a machine slow enough to take a whole period) one after it.
    expect(kidOf(after)).not.toBe(oldKid);
    expect(await servedKids()).toEqual(expect.arrayContaining([oldKid, kidOf(after)]));
    // Both verify against the JWKS served now (the old key stays until its tokens expired).
    const jwks = createRemoteJWKSet(new URL(`${api.url}/.well-known/jwks.json`));
    for (const token of [before, after]) {
      const { payload } = await jwtVerify(token, jwks, { issuer: api.url, audience: target.url });
      expect(payload.tool_id).toBe('token');
    }
  });
});
