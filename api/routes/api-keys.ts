import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  ApiKeyCreateBody,
  type ApiKeyCreated as ApiKeyCreatedSchema,
  type ApiKey as ApiKeySchema,
} from '../../crds/api.ts';
import { ROUTES } from '../../crds/routes.ts';
import {
  KG_ERR_ADMIN_KEY_WITH_TOOLS,
  KG_ERR_API_KEY_NOT_FOUND,
  KG_ERR_LAST_ADMIN_KEY,
} from '../../runs/errors.ts';
import type { StoredApiKey } from '../../store/index.ts';
import { type ApiKeyStore, generateApiKey, hashApiKey, newApiKeyId } from '../api-keys.ts';
import { type Auth, requireAdmin } from '../auth.ts';
import { parseInput } from '../validation.ts';

export interface ApiKeyRoutesDeps {
  store: ApiKeyStore;
  auth: Pick<Auth, 'evict'>;
}

type ApiKey = z.infer<typeof ApiKeySchema>;
type ApiKeyCreated = z.infer<typeof ApiKeyCreatedSchema>;

const KeyIdParams = z.object({ keyId: z.string().min(1) });

function queryOf(operationId: string): z.ZodType {
  const query = ROUTES.find((route) => route.operationId === operationId)?.query;
  if (!query) throw new Error(`route table has no query schema for ${operationId}`);
  return query;
}

/** The API shape of a key: never the secret, never its hash. */
function toApiKey(key: StoredApiKey): ApiKey {
  return {
    id: key.id,
    name: key.name,
    toolIds: key.toolIds,
    admin: key.admin,
    hostGateways: key.admin || key.hostGateways === true,
    createdAt: new Date(key.createdAt).toISOString(),
    lastUsedAt: key.lastUsedAt === null ? null : new Date(key.lastUsedAt).toISOString(),
  };
}

/** POST/GET /v1/api-keys and DELETE /v1/api-keys/:keyId, all for admin keys only. */
export function registerApiKeyRoutes(app: FastifyInstance, deps: ApiKeyRoutesDeps): void {
  const { store, auth } = deps;
  const createQuery = queryOf('createApiKey');
  const listQuery = queryOf('listApiKeys');
  const revokeQuery = queryOf('revokeApiKey');
  // Revocations in this process run one at a time, so two concurrent requests cannot each revoke
  // one of the last two admin keys.
  let revoking: Promise<unknown> = Promise.resolve();

  app.post('/v1/api-keys', async (request, reply) => {
    requireAdmin(request);
    parseInput(createQuery, request.query, 'query');
    const body = parseInput(ApiKeyCreateBody, request.body ?? {}, 'API key');
    // An admin key can mint unrestricted keys, so limiting it to tools would restrict nothing.
    if (body.admin && body.toolIds) throw KG_ERR_ADMIN_KEY_WITH_TOOLS();
    const key = generateApiKey();
    const row: Omit<StoredApiKey, 'lastUsedAt'> = {
      id: newApiKeyId(),
      name: body.name,
      keyHash: hashApiKey(key),
      toolIds: body.toolIds ? [...new Set(body.toolIds)] : null,
      admin: body.admin,
      hostGateways: body.hostGateways,
      createdAt: new Date().toISOString(),
    };
    await store.insertApiKey(row);
    const created: ApiKeyCreated = { ...toApiKey({ ...row, lastUsedAt: null }), key };
    return reply.status(201).send(created);
  });

  app.get('/v1/api-keys', async (request) => {
    requireAdmin(request);
    parseInput(listQuery, request.query, 'query');
    const keys = await store.listApiKeys();
    return { data: keys.map(toApiKey) };
  });

  app.delete('/v1/api-keys/:keyId', async (request) => {
    requireAdmin(request);
    parseInput(revokeQuery, request.query, 'query');
    const { keyId } = parseInput(KeyIdParams, request.params, 'path');
    const revoke = async () => {
      const target = (await store.listApiKeys()).find((key) => key.id === keyId);
      if (!target) throw KG_ERR_API_KEY_NOT_FOUND();
      if (target.admin && (await store.countApiKeys({ admin: true })) <= 1) throw KG_ERR_LAST_ADMIN_KEY();
      if (!(await store.revokeApiKey(keyId))) throw KG_ERR_API_KEY_NOT_FOUND();
      auth.evict(keyId);
      return { success: true };
    };
    const result = revoking.then(revoke);
    revoking = result.catch(() => {});
    return result;
  });
}
