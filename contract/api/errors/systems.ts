/** Errors of systems (their variants, URL and credentials) and of a system's documentation. */
import { type CatalogEntry, errorArea } from './define.ts';

const { define, entries } = errorArea();

export const KG_ERR_SYSTEM_NOT_FOUND = define(
  'KG_ERR_SYSTEM_NOT_FOUND',
  404,
  (systemId?: string, environment?: string) =>
    `system${systemId === undefined ? '' : ` '${systemId}'`}${environment ? ` (${environment})` : ''} not found`,
  'Check the id and ?environment=: GET /v1/systems lists the systems the key may see.',
);
// --- System documentation ---

export const KG_ERR_DOCUMENTATION_NOT_FOUND = define(
  'KG_ERR_DOCUMENTATION_NOT_FOUND',
  404,
  (systemId: string) =>
    `system '${systemId}' has no documentation: set documentationUrl or PUT a file to /v1/systems/${systemId}/documentation`,
  'Set documentationUrl on the system, or upload a file: PUT /v1/systems/{id}/documentation.',
);
export const KG_ERR_DOCUMENTATION_NOT_READY = define(
  'KG_ERR_DOCUMENTATION_NOT_READY',
  409,
  (systemId: string, status: string, error?: string) =>
    `the documentation of system '${systemId}' is ${status}${error ? `: ${error}` : ''}; no summary is kept yet`,
  "Wait until the system's documentation.status is ready (GET /v1/systems/{id}); a failed one says why in documentation.error: correct it, then update the system or upload again.",
);
export const KG_ERR_DOCUMENTATION_EMPTY = define(
  'KG_ERR_DOCUMENTATION_EMPTY',
  400,
  () => 'the documentation upload is empty: send the file as the request body',
  'Send the file as the request body.',
);

// --- Systems, continued: the catalog keeps declaration order, and docs/errors.md lists the codes in it ---

export const KG_ERR_SYSTEM_EXISTS = define(
  'KG_ERR_SYSTEM_EXISTS',
  409,
  (systemId?: string, environment?: string) =>
    `system${systemId === undefined ? '' : ` '${systemId}'`} already exists${environment ? ` in environment ${environment}` : ''}`,
  'Choose another id or environment, or change the system with PUT or PATCH /v1/systems/{id}.',
);
export const KG_ERR_SYSTEM_CHANGED_CONCURRENTLY = define(
  'KG_ERR_SYSTEM_CHANGED_CONCURRENTLY',
  409,
  (systemId?: string) =>
    `system${systemId === undefined ? '' : ` '${systemId}'`} was changed concurrently; try again`,
  'Another write changed the system at the same moment: read it again and retry.',
);
export const KG_ERR_SYSTEM_ID_MISMATCH = define(
  'KG_ERR_SYSTEM_ID_MISMATCH',
  400,
  (bodyId: string, pathId: string) =>
    `id in the body ('${bodyId}') does not match the system addressed ('${pathId}')`,
  "Leave id out of the body or make it the path's id.",
);
export const KG_ERR_SYSTEM_ENVIRONMENT_MISMATCH = define(
  'KG_ERR_SYSTEM_ENVIRONMENT_MISMATCH',
  400,
  (bodyEnvironment: string, queryEnvironment: string) =>
    `environment in the body (${bodyEnvironment}) does not match ?environment=${queryEnvironment}`,
  'Leave environment out of the body or make it the one ?environment= names.',
);
export const KG_ERR_SYSTEM_IN_USE = define(
  'KG_ERR_SYSTEM_IN_USE',
  409,
  (systemId: string, toolIds: readonly string[]) =>
    `system '${systemId}' is used by ${toolIds.length === 1 ? 'tool' : 'tools'} ${toolIds.map((t) => `'${t}'`).join(', ')}: ` +
    'change them to use another system first, or delete with ?force=true (they then fail to run)',
  'Change the tools it names to another system first, or delete with ?force=true (those tools then fail to run).',
);
export const KG_ERR_SYSTEM_ENVIRONMENT_REQUIRED = define(
  'KG_ERR_SYSTEM_ENVIRONMENT_REQUIRED',
  400,
  (systemId: string) =>
    `system '${systemId}' exists in dev and prod; choose one with ?environment=dev or ?environment=prod`,
  'Name the variant: add ?environment=dev or ?environment=prod.',
);
/** The resource was refused by its schema (the message names fields, never credential values). */
export const KG_ERR_SYSTEM_INVALID = define(
  'KG_ERR_SYSTEM_INVALID',
  400,
  (detail: string) => detail,
  'Fix the fields the message names and send the system again.',
);
export const KG_ERR_SYSTEM_URL_CREDENTIALS = define(
  'KG_ERR_SYSTEM_URL_CREDENTIALS',
  400,
  () =>
    'url must not contain credentials (user:password@): the URL is stored and returned in clear. Give them as ' +
    'credentials.username and credentials.password (authType basic for HTTP, dataStore for databases, Redis ' +
    'and file servers), which are stored encrypted and never returned',
  'Remove user:password@ from url and give credentials.username and credentials.password.',
);
/** A connection test of a system variant that names no server: no url, no connection URL in its credentials. */
export const KG_ERR_SYSTEM_NO_URL = define(
  'KG_ERR_SYSTEM_NO_URL',
  422,
  (systemId: string, environment: string) =>
    `system '${systemId}' (${environment}) has no URL to test: give it a url, or a connection URL in credentials.url`,
  'Give the system a url (PATCH /v1/systems/{id}), or for a data store its connection URL as the credential url; then test again.',
);
export const KG_ERR_CREDENTIAL_PLACEHOLDER_UNKNOWN = define(
  'KG_ERR_CREDENTIAL_PLACEHOLDER_UNKNOWN',
  400,
  (fields: readonly string[]) =>
    `credentials.${fields.join(', credentials.')}: a placeholder keeps a stored value, but this system has none under that name`,
  'A placeholder (<<id_key>>) keeps a stored value; for a credential the system does not have yet, send the value itself.',
);
export const KG_ERR_CREDENTIALS_INCOMPLETE = define(
  'KG_ERR_CREDENTIALS_INCOMPLETE',
  400,
  (fields: readonly string[], authType: string) => `${fields.join(', ')}: required for authType ${authType}`,
  'Add the credentials the message names: the auth type requires them.',
);
/** Deliberately a 500 with a message: the operator must learn the master key is wrong. */
export const KG_ERR_CREDENTIALS_UNREADABLE = define(
  'KG_ERR_CREDENTIALS_UNREADABLE',
  500,
  (systemId?: string) =>
    `the stored credentials of system${systemId === undefined ? '' : ` '${systemId}'`} cannot be decrypted: the master ` +
    'key (KUBEGLUE_MASTER_KEY or master.key in the data directory) is not the one they were stored with, or the data was altered',
  'Start the server with the master key the credentials were stored with (KUBEGLUE_MASTER_KEY, or master.key in the data directory); if that key is lost, store the credentials again.',
);

/** This area's codes in the order declared here (errors.ts puts the areas together into the catalog). */
export const SYSTEM_ERRORS: readonly CatalogEntry[] = entries;
