/**
 * Issue 7 through the public API of the embedded server: the egress settings reach the workers, System
 * carries allowedNetworks and extraOrigins, and what a caller can do with inputs and runtime credentials
 * is bounded by them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { useTestApi } from '../../support/embedded.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';

const api = useTestApi({ KUBEGLUE_EGRESS_PRIVATE: 'deny', KUBEGLUE_EGRESS_DENY: '10.96.0.0/12' });
let crm: HttpTarget;
let other: HttpTarget;
const TOKEN = 'crm-api-token-0123456789';

type RunWithNotes = Run & { stepResults: Array<{ stepId: string; error?: string; notes?: string[] }> };

beforeAll(async () => {
  [crm, other] = await Promise.all([startHttpTarget(), startHttpTarget()]);
  for (const target of [crm, other]) {
    target.route('GET', '/users', (req) => ({ body: { auth: req.headers.authorization ?? null } }));
  }
  // The Kubernetes default: private addresses refused unless allowed.
  const system = await api.call('POST', '/v1/systems', {
    body: {
      id: 'crm',
      url: crm.url,
      authType: 'bearer',
      credentials: { bearerToken: TOKEN },
      allowedNetworks: ['127.0.0.1'],
      extraOrigins: ['https://uploads.crm.example'],
    },
  });
  expect(system.status).toBe(201);
  for (const [id, url, systemId] of [
    ['via-system', '/users', 'crm'],
    ['direct', `${crm.url}/users`, undefined],
    ['follow-next', '<<next>>/users', 'crm'],
  ] as const) {
    const created = await api.call('POST', '/v1/tools', {
      body: { id, steps: [{ id: 'call', config: { url, ...(systemId ? { systemId } : {}) } }] },
    });
    expect(created.status).toBe(201);
  }
});

afterAll(async () => {
  await Promise.all([crm?.stop(), other?.stop()]);
});

describe('System fields', () => {
  it('stores and returns allowedNetworks and extraOrigins, and refuses malformed entries by field', async () => {
    const read = await api.call<{ data: unknown }>('GET', '/v1/systems/crm');
    expect(read.body.data).toMatchObject({
      allowedNetworks: ['127.0.0.1'],
      extraOrigins: ['https://uploads.crm.example'],
    });
    const bad = await api.call<{ error: { message: string } }>('POST', '/v1/systems', {
      body: {
        id: 'bad',
        url: 'https://x.test',
        allowedNetworks: ['10.0.0.0/99'],
        extraOrigins: ['https://x/path'],
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('allowedNetworks');
    expect(bad.body.error.message).toContain('extraOrigins');
  });
});

describe('egress through the API', () => {
  it('refuses a private target unless the step uses a system that allows it', async () => {
    const direct = await api.call<RunWithNotes>('POST', '/v1/tools/direct/run', { body: {} });
    expect(direct.body.status).toBe('failed');
    expect(direct.body.error).toContain('refused to connect to 127.0.0.1: a loopback address');

    const viaSystem = await api.call<RunWithNotes>('POST', '/v1/tools/via-system/run', { body: {} });
    expect(viaSystem.body.status).toBe('success');
    expect(viaSystem.body.data).toEqual({ auth: 'Bearer <<crm_bearerToken>>' });
  });
});

describe('what a caller can do', () => {
  it('cannot redirect the system with a runtime credential', async () => {
    const res = await api.call<RunWithNotes>('POST', '/v1/tools/via-system/run', {
      body: { credentials: { crm_url: other.url } },
    });
    expect(res.body.status).toBe('failed');
    expect(res.body.error).toContain(
      "Runtime credentials refused: 'crm_url' would replace the URL of system 'crm'",
    );
    expect(other.count('/users')).toBe(0);
  });

  it('cannot send the system credentials to an origin of its choosing', async () => {
    const res = await api.call<RunWithNotes>('POST', '/v1/tools/follow-next/run', {
      body: { inputs: { next: other.url } },
    });
    expect(res.body.status).toBe('success');
    expect(res.body.data).toEqual({ auth: null });
    expect(res.body.stepResults[0]?.notes?.[0]).toContain("the credentials of system 'crm' were not sent");
  });
});

describe('codeAccess: whether tool code may read a system credential (issue 19)', () => {
  const reader = {
    id: 'read-token',
    steps: [
      // A tool's systems are those its request steps name.
      { id: 'call', config: { url: '/users', systemId: 'crm' } },
      {
        id: 'read',
        config: { type: 'transform', transformCode: '(s) => ({ token: s.credentials.crm.bearerToken })' },
      },
    ],
  };

  it('is off for a new system: transform code that reads a credential fails with a message that says how to opt in', async () => {
    const read = await api.call<{ data: { codeAccess: boolean } }>('GET', '/v1/systems/crm');
    expect(read.body.data.codeAccess).toBe(false);
    expect((await api.call('POST', '/v1/tools', { body: reader })).status).toBe(201);
    const run = await api.call<RunWithNotes>('POST', '/v1/tools/read-token/run', { body: {} });
    expect(run.body.status).toBe('failed');
    expect(run.body.error).toContain(
      "credential crm_bearerToken is not available to code: system 'crm' does not allow it (set codeAccess: " +
        'true on the system if code must read its credentials, e.g. to sign requests: PATCH /v1/systems/crm ' +
        '{"codeAccess": true}',
    );
    expect(JSON.stringify(run.body)).not.toContain(TOKEN);
  });

  it('lets code read it once the system is patched as the message says, and the value is still redacted', async () => {
    const patched = await api.call<{ data: { codeAccess: boolean } }>('PATCH', '/v1/systems/crm', {
      body: { codeAccess: true },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.data.codeAccess).toBe(true);
    const run = await api.call<RunWithNotes>('POST', '/v1/tools/read-token/run', { body: {} });
    expect(run.body.status).toBe('success');
    expect(run.body.data).toEqual({ token: '<<crm_bearerToken>>' });

    const off = await api.call('PATCH', '/v1/systems/crm', { body: { codeAccess: false } });
    expect(off.status).toBe(200);
    const again = await api.call<RunWithNotes>('POST', '/v1/tools/read-token/run', { body: {} });
    expect(again.body.status).toBe('failed');
  });

  it('must be a boolean', async () => {
    const bad = await api.call<{ error: { message: string } }>('PATCH', '/v1/systems/crm', {
      body: { codeAccess: 'yes' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('codeAccess');
  });
});
