/**
 * Issue 29, item 5: a URL a browser is sent to (an OAuth authorization URL, the redirect URI) or kubeglue
 * reads (a token URL, documentation, notifications) is an http(s) URL. `javascript:`, `data:`, `vbscript:`
 * and the like are refused when they are saved, and credentials holding one (a Secret written with
 * kubectl, or stored before) give no usable client, so no authorization flow ever starts with them.
 */
import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import { oauthSettings } from '../../../systems/oauth/settings.ts';
import { useTestApi } from '../../support/embedded.ts';

const api = useTestApi();

const HOSTILE = [
  'javascript:alert(document.domain)',
  ' javascript:alert(document.domain)',
  'JavaScript:alert(1)',
  'data:text/html,<script>alert(1)</script>',
  'vbscript:msgbox(1)',
  'file:///etc/passwd',
];

const OAUTH = {
  clientId: 'kubeglue-client',
  clientSecret: 'client-secret-9f3e1a7c5b2d',
  tokenUrl: 'https://idp.example/token',
  authorizationUrl: 'https://idp.example/authorize',
};

/** A refusal that names the field and the rule, and never repeats the value sent. */
function expectRefused(answer: { status: number; body: unknown }, field: string, value: string): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(400);
  const { error } = answer.body as ErrorBody;
  expect(error.code).toBe('KG_ERR_VALIDATION');
  expect(error.message).toContain(field);
  expect(error.message).toContain('must be an http(s) URL');
  expect(error.message).not.toContain(value.trim());
}

describe('OAuth URLs', () => {
  it('refuses an authorization URL, token URL or redirect URI of any scheme but http(s), on create', async () => {
    for (const value of HOSTILE) {
      for (const field of ['authorizationUrl', 'tokenUrl', 'redirectUri']) {
        const answer = await api.call('POST', '/v1/systems', {
          body: {
            id: 'idp',
            url: 'https://idp.example',
            authType: 'oauth',
            credentials: { ...OAUTH, grantType: 'authorization_code', [field]: value },
          },
        });
        expectRefused(answer, `credentials.${field}`, value);
      }
    }
    expect((await api.call('GET', '/v1/systems/idp')).status).toBe(404);
  });

  it('refuses one on update, and the stored URL stays', async () => {
    const created = await api.call('POST', '/v1/systems', {
      body: { id: 'idp', url: 'https://idp.example', authType: 'oauth', credentials: OAUTH },
    });
    expect(created.status, created.text).toBe(201);
    for (const method of ['PUT', 'PATCH']) {
      const answer = await api.call(method, '/v1/systems/idp', {
        body: { credentials: { ...OAUTH, authorizationUrl: HOSTILE[0] } },
      });
      expectRefused(answer, 'credentials.authorizationUrl', HOSTILE[0] as string);
    }
    const started = await api.call<{ data: { authorizationUrl: string } }>(
      'GET',
      '/v1/systems/idp/oauth/authorize',
    );
    expect(started.status, started.text).toBe(200);
    expect(started.body.data.authorizationUrl).toMatch(/^https:\/\/idp\.example\/authorize\?/);
  });

  it('gives no usable client for credentials that hold one anyway (a Secret applied with kubectl)', () => {
    expect(oauthSettings(OAUTH)).toBeDefined();
    for (const value of HOSTILE) {
      expect(oauthSettings({ ...OAUTH, authorizationUrl: value }), value).toBeUndefined();
      expect(oauthSettings({ ...OAUTH, redirectUri: value }), value).toBeUndefined();
      expect(oauthSettings({ ...OAUTH, tokenUrl: value }), value).toBeUndefined();
    }
  });
});

describe('documentation URLs', () => {
  it('refuses a documentationUrl of any scheme but http(s), on create and on update; empty means none', async () => {
    for (const value of HOSTILE) {
      const answer = await api.call('POST', '/v1/systems', {
        body: { id: 'docs', url: 'https://api.example', documentationUrl: value },
      });
      expectRefused(answer, 'documentationUrl', value);
    }
    const created = await api.call('POST', '/v1/systems', {
      body: { id: 'docs', url: 'https://api.example', documentationUrl: '' },
    });
    expect(created.status, created.text).toBe(201);
    const updated = await api.call('PATCH', '/v1/systems/docs', {
      body: { documentationUrl: HOSTILE[3] },
    });
    expectRefused(updated, 'documentationUrl', HOSTILE[3] as string);
  });
});

describe('notification URLs', () => {
  it('refuses a webhookUrl of any scheme but http(s) or tool:, for runs and schedules', async () => {
    const tool = await api.call('POST', '/v1/tools', {
      body: { id: 'noop', steps: [{ id: 'k', config: { type: 'transform', transformCode: '() => 1' } }] },
    });
    expect(tool.status, tool.text).toBe(201);
    for (const webhookUrl of HOSTILE) {
      const run = await api.call<ErrorBody>('POST', '/v1/tools/noop/run', {
        body: { options: { async: true, webhookUrl } },
      });
      expect(run.status, webhookUrl).toBe(400);
      expect(run.body.error.message).toContain('must be an http(s) URL or tool:<toolId>');
      const schedule = await api.call<ErrorBody>('POST', '/v1/tools/noop/schedules', {
        body: { cronExpression: '0 * * * *', options: { webhookUrl } },
      });
      expect(schedule.status, webhookUrl).toBe(400);
    }
  });
});
