/** The API keys routes: the calling key; creating, listing and revoking keys (admin). */
import {
  ApiKey,
  ApiKeyCreateBody,
  ApiKeyCreated,
  ApiKeyList,
  ApiKeyUpdateBody,
  DeleteResult,
  Me,
} from '../bodies.ts';
import { adminOnly, badRequest, failure, notFound } from './shared.ts';
import type { RouteSpec } from './spec.ts';

/** The API keys operations. */
export const API_KEY_ROUTES = [
  {
    method: 'GET',
    path: '/me',
    operationId: 'getMe',
    summary: 'The calling API key (never the key itself)',
    tag: 'API keys',
    scopes: [],
    responses: { 200: { description: 'The key', schema: Me } },
  },
  {
    method: 'POST',
    path: '/api-keys',
    operationId: 'createApiKey',
    summary: 'Create an API key (admin)',
    tag: 'API keys',
    scopes: ['keys:admin'],
    body: { schema: ApiKeyCreateBody, name: 'API key', optional: true },
    responses: {
      201: { description: 'Created; the key is shown once', schema: ApiKeyCreated },
      400: badRequest,
      403: failure('The key lacks keys:admin, or would grant more than it has'),
    },
  },
  {
    method: 'GET',
    path: '/api-keys',
    operationId: 'listApiKeys',
    summary: 'List API keys without secrets (admin)',
    tag: 'API keys',
    scopes: ['keys:admin'],
    responses: { 200: { description: 'Keys', schema: ApiKeyList }, 403: adminOnly },
  },
  {
    method: 'PATCH',
    path: '/api-keys/{keyId}',
    operationId: 'updateApiKey',
    summary: "Change an API key's quotas (admin)",
    tag: 'API keys',
    scopes: ['keys:admin'],
    body: { schema: ApiKeyUpdateBody, name: 'API key update' },
    responses: {
      200: { description: 'The key as it is now', schema: ApiKey },
      400: badRequest,
      403: failure('The key lacks keys:admin, or could not have created this key'),
      404: notFound,
    },
  },
  {
    method: 'DELETE',
    path: '/api-keys/{keyId}',
    operationId: 'revokeApiKey',
    summary: 'Revoke an API key (admin)',
    tag: 'API keys',
    scopes: ['keys:admin'],
    responses: { 200: { description: 'Revoked', schema: DeleteResult }, 404: notFound },
  },
] as const satisfies readonly RouteSpec[];
