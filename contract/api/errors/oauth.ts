/** Errors of a system's OAuth (systems/oauth/): authorization, tokens, refresh. */
import { type CatalogEntry, errorArea } from './define.ts';

const { define, entries } = errorArea();

const authorizeHint = (systemId: string, environment: string) =>
  `GET /v1/systems/${encodeURIComponent(systemId)}/oauth/authorize?environment=${environment}`;

/** The provider refused the refresh token (invalid_grant): only the user can grant access again. */
export const KG_ERR_OAUTH_REAUTHORIZATION_REQUIRED = define(
  'KG_ERR_OAUTH_REAUTHORIZATION_REQUIRED',
  409,
  (systemId: string, environment: string) =>
    `System '${systemId}' (${environment}) needs re-authorization: the provider refused its refresh token ` +
    `(invalid_grant). Authorize it again: ${authorizeHint(systemId, environment)}`,
  'Authorize the system again: open the authorizationUrl that GET /v1/systems/{id}/oauth/authorize answers in a browser and consent (docs/oauth.md).',
);
export const KG_ERR_OAUTH_NOT_AUTHORIZED = define(
  'KG_ERR_OAUTH_NOT_AUTHORIZED',
  409,
  (systemId: string, environment: string) =>
    `System '${systemId}' (${environment}) uses the authorization-code grant and has not been authorized ` +
    `yet: ${authorizeHint(systemId, environment)}`,
  'Authorize the system: open the authorizationUrl that GET /v1/systems/{id}/oauth/authorize answers in a browser and consent (docs/oauth.md).',
);
/** The token endpoint answered an RFC 6749 error (names the code and the provider's description only). */
export const KG_ERR_OAUTH_TOKEN_REFUSED = define(
  'KG_ERR_OAUTH_TOKEN_REFUSED',
  502,
  (systemId: string, error: string, description?: string) =>
    `The token endpoint of system '${systemId}' refused the request: ${error}${description ? ` (${description})` : ''}`,
  "Correct the system's OAuth credentials as the provider's error says (invalid_client: clientId and clientSecret; invalid_scope: scopes).",
);
export const KG_ERR_OAUTH_PROVIDER_UNREACHABLE = define(
  'KG_ERR_OAUTH_PROVIDER_UNREACHABLE',
  502,
  (systemId: string, reason: string) => `The token endpoint of system '${systemId}' failed: ${reason}`,
  "Check tokenUrl and that the provider can be reached through the egress guard (KUBEGLUE_EGRESS_*, the system's allowedNetworks), then retry.",
);
export const KG_ERR_OAUTH_REFRESH_BUSY = define(
  'KG_ERR_OAUTH_REFRESH_BUSY',
  503,
  (systemId: string) =>
    `The access token of system '${systemId}' is being refreshed by another process that has not finished; retry`,
  'Another process is refreshing the token: retry after Retry-After.',
  { 'Retry-After': '1' },
);
export const KG_ERR_OAUTH_NOT_CONFIGURED = define(
  'KG_ERR_OAUTH_NOT_CONFIGURED',
  400,
  (systemId: string, what: string) => `System '${systemId}' cannot use OAuth: ${what}`,
  'Give the system authType oauth and the credentials the message names (clientId, clientSecret, tokenUrl; authorizationUrl for the authorization-code grant).',
);
/** Unknown, used, expired, or its API key was revoked: the same answer, so a guess learns nothing. */
export const KG_ERR_OAUTH_STATE_INVALID = define(
  'KG_ERR_OAUTH_STATE_INVALID',
  400,
  () =>
    'The authorization state is unknown, was used already or has expired (10 minutes); start again with ' +
    'GET /v1/systems/{id}/oauth/authorize',
  'Start the authorization again with GET /v1/systems/{id}/oauth/authorize: a state is single use and lasts 10 minutes.',
);
/** Anything but a path or URL of the server's own origin: the callback never sends a browser elsewhere. */
export const KG_ERR_OAUTH_RETURN_INVALID = define(
  'KG_ERR_OAUTH_RETURN_INVALID',
  400,
  (origin: string) =>
    `returnTo must be a path of this server or a URL of its origin (${origin}): the callback sends the ` +
    'browser back there, never to another site',
  "Give returnTo as a path (/systems/crm) or a URL on the origin of KUBEGLUE_PUBLIC_URL, or leave it out to get the callback's answer as JSON.",
);
export const KG_ERR_OAUTH_DENIED = define(
  'KG_ERR_OAUTH_DENIED',
  400,
  (error: string, description?: string) =>
    `The provider did not grant access: ${error}${description ? ` (${description})` : ''}`,
  "Consent was refused at the provider: start the authorization again and grant access, or check the client's settings there.",
);

/** This area's codes in the order declared here (errors.ts puts the areas together into the catalog). */
export const OAUTH_ERRORS: readonly CatalogEntry[] = entries;
