/**
 * The Systems routes: a system's documentation; a system and its variants, its credential keys, the
 * connection test and the OAuth flow.
 */
import { z } from 'zod';
import { SystemDeleteResult, SystemList } from '../bodies.ts';
import { DocumentationSearchAnswer, DocumentationSearchBody } from '../documentation.ts';
import {
  OAuthAuthorization,
  OAuthAuthorizeQuery,
  OAuthCallbackQuery,
  OAuthCallbackResult,
} from '../oauth.ts';
import { pageLimit } from '../paging.ts';
import {
  ConnectionTestResult,
  CredentialSetList,
  Environment,
  SystemCreateBody,
  SystemDocumentationEnvelope,
  SystemDocumentationStateEnvelope,
  SystemEnvelope,
  SystemUpdateBody,
} from '../system.ts';
import { badRequest, failure, notFound, restricted, tooManySyncRuns } from './shared.ts';
import type { RouteSpec } from './spec.ts';

const envQuery = z.strictObject({ environment: Environment.optional(), token: z.string().optional() });

/** PUT and PATCH of a system are the same partial update. */
const systemUpdate = {
  path: '/systems/{systemId}',
  tag: 'Systems',
  scopes: ['systems:write'],
  query: envQuery,
  body: { schema: SystemUpdateBody, name: 'system update', optional: true },
  responses: {
    200: { description: 'The updated system', schema: SystemEnvelope },
    400: badRequest,
    404: notFound,
  },
} as const;

/** A system's documentation: upload, read, search. */
export const SYSTEM_DOCUMENTATION_ROUTES = [
  {
    method: 'PUT',
    path: '/systems/{systemId}/documentation',
    operationId: 'uploadSystemDocumentation',
    summary: 'Upload a documentation file (the body, any content type); processed in the background',
    tag: 'Systems',
    scopes: ['systems:write'],
    query: z.strictObject({
      environment: Environment.optional(),
      filename: z
        .string()
        .max(200)
        .optional()
        .describe('The file name (its extension helps detect the format).'),
      token: z.string().optional(),
    }),
    bodyContentTypes: [
      'application/octet-stream',
      'application/json',
      'application/yaml',
      'text/html',
      'application/pdf',
      'application/zip',
      'text/markdown',
      'text/plain',
    ],
    responses: {
      202: { description: 'Accepted; the state is pending', schema: SystemDocumentationStateEnvelope },
      400: badRequest,
      404: notFound,
      413: failure('The file is larger than KUBEGLUE_DOCS_MAX_BYTES'),
    },
  },
  {
    method: 'GET',
    path: '/systems/{systemId}/documentation',
    operationId: 'getSystemDocumentation',
    summary:
      'The processed documentation of a system: its state and the kept summary (format=text: plain text)',
    tag: 'Systems',
    scopes: ['systems:read'],
    query: z.strictObject({
      environment: Environment.optional(),
      format: z.enum(['json', 'text']).optional(),
      token: z.string().optional(),
    }),
    responses: {
      200: { description: 'The state and summary (or plain text)', schema: SystemDocumentationEnvelope },
      404: notFound,
      409: failure('format=text while no summary is kept yet'),
    },
  },
  {
    method: 'POST',
    path: '/systems/{systemId}/documentation/search',
    operationId: 'searchSystemDocumentation',
    summary:
      "Keyword search over a system's processed documentation: the best sections, where each came from",
    tag: 'Systems',
    scopes: ['systems:read'],
    query: envQuery,
    body: { schema: DocumentationSearchBody, name: 'documentation search' },
    responses: {
      200: {
        description: 'Ranked sections (none when nothing matched or there is no documentation)',
        schema: DocumentationSearchAnswer,
      },
      400: badRequest,
      404: notFound,
      409: failure('No summary is kept yet: the documentation is still being processed, or failed'),
    },
  },
] as const satisfies readonly RouteSpec[];

/** A system: create, list, get, update, delete; its credential keys, the connection test, OAuth. */
export const SYSTEM_ROUTES = [
  {
    method: 'POST',
    path: '/systems',
    operationId: 'createSystem',
    summary: 'Create a system',
    tag: 'Systems',
    scopes: ['systems:write'],
    body: { schema: SystemCreateBody, name: 'system' },
    responses: {
      201: { description: 'Created; credentials shown as placeholders', schema: SystemEnvelope },
      400: badRequest,
      409: failure('This id already exists in this environment'),
    },
  },
  {
    method: 'GET',
    path: '/systems',
    operationId: 'listSystems',
    summary: 'List systems',
    tag: 'Systems',
    scopes: ['systems:read'],
    query: z.strictObject({
      page: z.coerce.number().int().min(1).default(1),
      limit: pageLimit(50, 100),
      systemId: z
        .string()
        .min(1)
        .optional()
        .describe('Only the variants of this system id (prod, dev): none when it has none, not a 404.'),
      token: z.string().optional(),
    }),
    responses: { 200: { description: 'Systems', schema: SystemList } },
  },
  {
    method: 'GET',
    path: '/systems/{systemId}',
    operationId: 'getSystem',
    summary: 'Get a system (prod unless environment=dev)',
    tag: 'Systems',
    scopes: ['systems:read'],
    query: envQuery,
    responses: { 200: { description: 'The system', schema: SystemEnvelope }, 404: notFound },
  },
  { method: 'PUT', operationId: 'updateSystem', summary: 'Update a system', ...systemUpdate },
  {
    method: 'PATCH',
    operationId: 'patchSystem',
    summary: 'Update a system (the same partial update as PUT)',
    ...systemUpdate,
  },
  {
    method: 'GET',
    path: '/credentials',
    operationId: 'listCredentialSets',
    summary: "Each system variant's stored credential keys, read-only (superglue's credential sets)",
    tag: 'Systems',
    scopes: ['systems:read'],
    query: z.strictObject({ systemId: z.string().min(1).optional(), token: z.string().optional() }),
    responses: {
      200: { description: 'Credential keys, never values', schema: CredentialSetList },
      403: restricted,
    },
  },
  {
    method: 'DELETE',
    path: '/systems/{systemId}',
    operationId: 'deleteSystem',
    summary: 'Delete a system (409 while tools use it, unless force=true)',
    tag: 'Systems',
    scopes: ['systems:write'],
    query: envQuery.extend({
      force: z
        .enum(['true', 'false'])
        .default('false')
        .transform((v) => v === 'true')
        .describe(
          'Delete the last variant even though tools use it; the answer lists them in brokenTools ' +
            '(their runs then fail: the system does not exist).',
        ),
    }),
    responses: {
      200: { description: 'Deleted', schema: SystemDeleteResult },
      404: notFound,
      409: failure('Tools still use the system (listed in the message)'),
    },
  },
  {
    method: 'POST',
    path: '/systems/{systemId}/test',
    operationId: 'testSystemConnection',
    summary:
      'Test the connection: one harmless read with the stored credentials (GET, SELECT 1, DBSIZE, list…), not recorded as a run',
    tag: 'Systems',
    // A fixed read, so running it needs no tools:write; it is a run, so runs:execute.
    scopes: ['systems:read', 'runs:execute'],
    query: envQuery,
    responses: {
      200: {
        description: 'The outcome, failed or not: success, what was tried, how long it took, the error',
        schema: ConnectionTestResult,
      },
      403: restricted,
      404: notFound,
      422: failure('The system has no URL, or a protocol no step speaks (MSSQL, MongoDB)'),
      429: tooManySyncRuns,
    },
  },
  {
    method: 'GET',
    path: '/systems/{systemId}/oauth/authorize',
    operationId: 'authorizeSystemOAuth',
    summary: "Start the OAuth authorization-code flow: the provider's URL (state and PKCE S256 included)",
    tag: 'Systems',
    scopes: ['systems:write'],
    query: OAuthAuthorizeQuery,
    responses: {
      200: { description: 'The authorization URL', schema: OAuthAuthorization },
      400: badRequest,
      403: restricted,
      404: notFound,
    },
  },
  {
    method: 'GET',
    path: '/oauth/callback',
    operationId: 'oauthCallback',
    summary:
      'Where the provider sends the browser back: exchanges the code (no API key; the state is the credential)',
    tag: 'Systems',
    public: true,
    query: OAuthCallbackQuery,
    responses: {
      200: { description: 'The system is authorized', schema: OAuthCallbackResult },
      303: {
        description:
          'The flow was started with returnTo: back there, with oauth=connected, or oauth=failed and error (the code)',
      },
      400: badRequest,
    },
  },
] as const satisfies readonly RouteSpec[];
