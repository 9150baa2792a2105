/**
 * Errors of API keys and authorisation: a missing or invalid key, scopes, restrictions to tools and systems,
 * key management.
 */
import { type CatalogEntry, errorArea } from './define.ts';

const { define, entries } = errorArea();

/** Every 401 names the scheme to use (RFC 9110); an unknown key is `invalid_token` (RFC 6750). */
const API_REALM = 'Bearer realm="kubeglue"';
export const KG_ERR_MISSING_API_KEY = define(
  'KG_ERR_MISSING_API_KEY',
  401,
  () => 'Missing API key: send Authorization: Bearer <key> or ?token=<key>',
  'Send an API key: Authorization: Bearer <key>, or ?token=<key>.',
  { 'WWW-Authenticate': API_REALM },
);
export const KG_ERR_INVALID_API_KEY = define(
  'KG_ERR_INVALID_API_KEY',
  401,
  () => 'Invalid or revoked API key',
  'Use a valid key: this one is unknown or revoked (a revocation made on another replica applies within 10 s). Keys are created with POST /v1/api-keys.',
  { 'WWW-Authenticate': `${API_REALM}, error="invalid_token"` },
);
/** The key lacks a scope the route declares (contract/api/routes.ts). */
export const KG_ERR_SCOPE_REQUIRED = define(
  'KG_ERR_SCOPE_REQUIRED',
  403,
  (scope: string, operation: string) =>
    `This API key lacks the scope '${scope}' that ${operation} needs: use a key with it, or ask an admin to create one (POST /v1/api-keys with "scopes")`,
  'Use a key with the scope the message names, or ask an admin for one (docs/security.md lists what each scope allows).',
);
/** A key limited to some tools asked for something that is not about one of its tools. */
export const KG_ERR_KEY_RESTRICTED = define(
  'KG_ERR_KEY_RESTRICTED',
  403,
  () => 'This API key is limited to specific tools',
  'The key is limited to some tools and the request is not about one of them (an unsaved definition, a step run, a new tool outside its list): use a key that is not limited, or one whose toolIds include the tool.',
);
/**
 * A tool saved or run, or a system created, names a system outside the key's systemIds. Decided by name
 * before the system is looked up, so the answer is the same whether the system exists or not.
 */
export const KG_ERR_SYSTEM_NOT_GRANTED = define(
  'KG_ERR_SYSTEM_NOT_GRANTED',
  403,
  (systemId: string, where?: string) =>
    `This API key may not use system '${systemId}'${where ? ` (${where})` : ''}: its systemIds do not include it; use a key that may, or ask an admin for one`,
  'Use a key whose systemIds include the system, or ask an admin to grant it.',
);
/** A key tried to create a key with more than it has itself, or to revoke such a key. */
export const KG_ERR_GRANT_EXCEEDS_KEY = define(
  'KG_ERR_GRANT_EXCEEDS_KEY',
  403,
  (action: 'create' | 'update' | 'revoke', problem: string) =>
    `An API key can ${action} only keys with no more than it has itself, and this one ${problem}`,
  'Create, change or revoke only keys with no more scopes, tools and systems than the key you use, or use an admin key.',
);
export const KG_ERR_API_KEY_NOT_FOUND = define(
  'KG_ERR_API_KEY_NOT_FOUND',
  404,
  () => 'API key not found',
  "Check the key's id: GET /v1/api-keys lists the keys; it may have been revoked already.",
);
export const KG_ERR_ADMIN_KEY_WITH_TOOLS = define(
  'KG_ERR_ADMIN_KEY_WITH_TOOLS',
  400,
  () =>
    'An admin API key has every scope and no restriction: give "scopes", "toolIds" or "systemIds" without "admin": true',
  'Send either "admin": true alone, or scopes, toolIds and systemIds without admin.',
);
export const KG_ERR_LAST_ADMIN_KEY = define(
  'KG_ERR_LAST_ADMIN_KEY',
  409,
  () =>
    'Cannot revoke the last admin API key: nobody could manage API keys any more. Create another admin key first.',
  'Create another admin key first, then revoke this one.',
);

/** This area's codes in the order declared here (errors.ts puts the areas together into the catalog). */
export const AUTH_ERRORS: readonly CatalogEntry[] = entries;
