/** The body and headers of a token request (RFC 6749 §4.1.3, §4.4.2, §6) with the client's authentication. Pure. */
import type { OAuthSettings, TokenAuthMethod } from './settings.ts';

export type GrantRequest =
  | { grant: 'client_credentials' }
  | { grant: 'authorization_code'; code: string; redirectUri: string; codeVerifier: string }
  | { grant: 'refresh_token'; refreshToken: string };

export interface TokenRequest {
  headers: Record<string, string>;
  body: string;
}

/** RFC 6749 §2.3.1: id and secret are form-encoded before they are joined and base64-encoded. */
function basicCredentials(clientId: string, clientSecret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
  return Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64');
}

export function buildTokenRequest(
  settings: OAuthSettings,
  request: GrantRequest,
  method: TokenAuthMethod,
): TokenRequest {
  const params = new URLSearchParams({ grant_type: request.grant });
  switch (request.grant) {
    case 'client_credentials':
      if (settings.scopes?.trim()) params.set('scope', settings.scopes.trim());
      if (settings.audience) params.set('audience', settings.audience);
      break;
    case 'authorization_code':
      params.set('code', request.code);
      params.set('redirect_uri', request.redirectUri);
      params.set('code_verifier', request.codeVerifier);
      break;
    case 'refresh_token':
      params.set('refresh_token', request.refreshToken);
      break;
  }
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  };
  if (method === 'client_secret_basic') {
    headers.authorization = `Basic ${basicCredentials(settings.clientId, settings.clientSecret)}`;
  } else {
    params.set('client_id', settings.clientId);
    params.set('client_secret', settings.clientSecret);
  }
  return { headers, body: params.toString() };
}

/**
 * The client authentication to use: the configured one; else what the provider's discovery document
 * lists (basic preferred, as RFC 6749 asks servers to support it); else client_secret_basic.
 */
export function chooseAuthMethod(
  configured: TokenAuthMethod | undefined,
  supported: readonly string[] | undefined,
): TokenAuthMethod {
  if (configured) return configured;
  if (
    supported?.length &&
    !supported.includes('client_secret_basic') &&
    supported.includes('client_secret_post')
  ) {
    return 'client_secret_post';
  }
  return 'client_secret_basic';
}
