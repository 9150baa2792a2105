import { describe, expect, it } from 'vitest';
import { codeChallengeS256 } from '../../../systems/oauth/pkce.ts';
import { needsRefresh, settingsFingerprint } from '../../../systems/oauth/settings.ts';
import { buildTokenRequest, chooseAuthMethod } from '../../../systems/oauth/token-request.ts';
import { parseTokenAnswer } from '../../../systems/oauth/token-response.ts';

const settings = { clientId: 'my client', clientSecret: 's:e+cret', tokenUrl: 'https://idp.example/token' };

describe('token endpoint answers (RFC 6749 §5)', () => {
  it('reads a JSON answer', () => {
    const answer = parseTokenAnswer(
      200,
      'application/json; charset=utf-8',
      '{"access_token":"at","token_type":"bearer","expires_in":3600,"refresh_token":"rt","scope":"a b"}',
    );
    expect(answer).toEqual({
      ok: true,
      grant: { accessToken: 'at', tokenType: 'Bearer', expiresIn: 3600, refreshToken: 'rt', scope: 'a b' },
    });
  });

  it('reads a form-encoded answer, expires_in as text', () => {
    const answer = parseTokenAnswer(
      200,
      'application/x-www-form-urlencoded',
      'access_token=at&token_type=Bearer&expires_in=60',
    );
    expect(answer).toEqual({ ok: true, grant: { accessToken: 'at', tokenType: 'Bearer', expiresIn: 60 } });
  });

  it('reads an error answer, JSON or form-encoded, with its description', () => {
    expect(
      parseTokenAnswer(400, 'application/json', '{"error":"invalid_grant","error_description":"revoked"}'),
    ).toEqual({
      ok: false,
      error: 'invalid_grant',
      description: 'revoked',
    });
    expect(parseTokenAnswer(200, 'text/plain', 'error=bad_verification_code')).toEqual({
      ok: false,
      error: 'bad_verification_code',
    });
  });

  it('refuses answers without a token, or with a token type other than Bearer', () => {
    expect(parseTokenAnswer(200, 'text/html', '<html>login</html>')).toMatchObject({
      ok: false,
      error: 'invalid_response',
    });
    expect(
      parseTokenAnswer(200, 'application/json', '{"access_token":"x","token_type":"mac"}'),
    ).toMatchObject({
      ok: false,
      error: 'unsupported_token_type',
    });
    expect(parseTokenAnswer(503, 'text/plain', 'down')).toMatchObject({ ok: false, error: 'http_error' });
  });
});

describe('token requests', () => {
  it('client_secret_basic form-encodes id and secret before base64 (RFC 6749 §2.3.1)', () => {
    const request = buildTokenRequest(settings, { grant: 'client_credentials' }, 'client_secret_basic');
    const decoded = Buffer.from(
      request.headers.authorization?.slice('Basic '.length) ?? '',
      'base64',
    ).toString();
    expect(decoded).toBe('my+client:s%3Ae%2Bcret');
    expect(new URLSearchParams(request.body).get('client_secret')).toBeNull();
  });

  it('client_secret_post sends them in the body; a refresh sends the refresh token', () => {
    const request = buildTokenRequest(
      settings,
      { grant: 'refresh_token', refreshToken: 'rt' },
      'client_secret_post',
    );
    const body = new URLSearchParams(request.body);
    expect(body.get('grant_type')).toBe('refresh_token');
    expect(body.get('refresh_token')).toBe('rt');
    expect(body.get('client_id')).toBe('my client');
    expect(request.headers.authorization).toBeUndefined();
  });

  it('chooses the configured method, else basic unless discovery offers post only', () => {
    expect(chooseAuthMethod('client_secret_post', ['client_secret_basic'])).toBe('client_secret_post');
    expect(chooseAuthMethod(undefined, ['client_secret_post'])).toBe('client_secret_post');
    expect(chooseAuthMethod(undefined, ['client_secret_basic', 'client_secret_post'])).toBe(
      'client_secret_basic',
    );
    expect(chooseAuthMethod(undefined, undefined)).toBe('client_secret_basic');
  });
});

describe('token lifetime and identity', () => {
  it('refreshes a token a minute before it expires, never one without an expiry', () => {
    expect(needsRefresh(100_000, 39_999)).toBe(false);
    expect(needsRefresh(100_000, 40_000)).toBe(true);
    expect(needsRefresh(undefined, Number.MAX_SAFE_INTEGER)).toBe(false);
  });

  it('a change of client or scopes is another token; a new secret is not', () => {
    const base = settingsFingerprint(settings);
    expect(settingsFingerprint({ ...settings, clientSecret: 'other' })).toBe(base);
    expect(settingsFingerprint({ ...settings, scopes: 'a' })).not.toBe(base);
    expect(settingsFingerprint({ ...settings, scopes: 'b a' })).toBe(
      settingsFingerprint({ ...settings, scopes: 'a b' }),
    );
  });

  it('PKCE S256 matches RFC 7636 appendix B', () => {
    expect(codeChallengeS256('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    );
  });
});
