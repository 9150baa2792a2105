/**
 * Which systems get their access token managed by kubeglue, and the OAuth settings read from their stored
 * credentials. Pure: no I/O.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { HttpUrl } from '../../contract/api/system.ts';

export const TokenAuthMethod = z.enum(['client_secret_basic', 'client_secret_post']);
export type TokenAuthMethod = z.infer<typeof TokenAuthMethod>;

export const GrantType = z.enum(['client_credentials', 'authorization_code']);
export type GrantType = z.infer<typeof GrantType>;

/**
 * The OAuth settings of a system, from its credentials (never from a request). Its URLs are http(s) ones
 * also where no REST check saw them (a Secret applied with kubectl): credentials with another scheme hold
 * no usable client, so no browser is ever sent to a javascript: or data: authorization URL.
 */
export const OAuthSettings = z.object({
  clientId: z.string().min(1),
  clientSecret: z.string().min(1),
  tokenUrl: HttpUrl,
  authorizationUrl: HttpUrl.optional(),
  scopes: z.string().optional(),
  audience: z.string().optional(),
  redirectUri: HttpUrl.optional(),
  grantType: GrantType.optional(),
  tokenAuthMethod: TokenAuthMethod.optional(),
});
export type OAuthSettings = z.infer<typeof OAuthSettings>;

/**
 * An oauth system whose token kubeglue obtains and refreshes: it has a client and a token URL and no
 * `accessToken` of its own (a stored accessToken is sent as is, as before).
 */
export function isManagedOAuth(
  authType: string | undefined,
  credentials: Readonly<Record<string, string>>,
): boolean {
  return (
    authType === 'oauth' &&
    credentials.accessToken === undefined &&
    OAuthSettings.safeParse(credentials).success
  );
}

/** The settings, or undefined when the credentials do not hold a usable client. */
export function oauthSettings(credentials: Readonly<Record<string, string>>): OAuthSettings | undefined {
  const parsed = OAuthSettings.safeParse(credentials);
  return parsed.success ? parsed.data : undefined;
}

/**
 * Identifies the client and what it asks for, without the secret: a cached token belongs to this
 * fingerprint, so changing the client, token URL, scopes or audience makes kubeglue ask again.
 */
export function settingsFingerprint(settings: OAuthSettings): string {
  const parts = [
    settings.clientId,
    settings.tokenUrl,
    settings.authorizationUrl ?? '',
    normaliseScopes(settings.scopes),
    settings.audience ?? '',
  ];
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** Space-separated scopes, deduplicated, in a stable order. */
export function normaliseScopes(scopes: string | undefined): string {
  return [...new Set((scopes ?? '').split(/\s+/).filter(Boolean))].sort().join(' ');
}

/** A token this close to its expiry is refreshed before use (clock skew, request time). */
export const REFRESH_MARGIN_MS = 60_000;

/** Whether a token expiring at `expiresAt` (epoch ms; undefined: no expiry given) must be refreshed now. */
export function needsRefresh(
  expiresAt: number | undefined,
  now: number,
  marginMs = REFRESH_MARGIN_MS,
): boolean {
  return expiresAt !== undefined && now >= expiresAt - marginMs;
}

/** The grant a system's token comes from: what the user chose, else what its stored token came from. */
export function grantOf(settings: OAuthSettings, storedGrant: GrantType | undefined): GrantType {
  return settings.grantType ?? storedGrant ?? 'client_credentials';
}

/** The route a user calls to (re-)authorize a system, as run errors and the System status name it. */
export function authorizeRoute(systemId: string, environment: string): string {
  return `GET /v1/systems/${encodeURIComponent(systemId)}/oauth/authorize?environment=${environment}`;
}

/** The value of OAUTH_STATUS_ANNOTATION (contract/resources/labels.ts) while the provider refuses the refresh token. */
export const OAUTH_NEEDS_REAUTHORIZATION = 'needs-reauthorization';
