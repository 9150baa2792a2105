import type { z } from 'zod';
import type {
  ApiKeyCreateBody,
  ApiKeyCreated as ApiKeyCreatedSchema,
  ApiKeyQuotas as ApiKeyQuotasBody,
  ApiKey as ApiKeySchema,
} from '../../contract/api/bodies.ts';
import {
  KG_ERR_ADMIN_KEY_WITH_TOOLS,
  KG_ERR_API_KEY_NOT_FOUND,
  KG_ERR_GRANT_EXCEEDS_KEY,
  KG_ERR_LAST_ADMIN_KEY,
  KG_ERR_VALIDATION,
} from '../../contract/api/errors.ts';
import { KeyedLock } from '../../platform/keyed-lock.ts';
import type { ApiKeyQuotas, StoredApiKey, StoreQueries } from '../../store/index.ts';
import { type ApiKeyStore, generateApiKey, hashApiKey, newApiKeyId } from '../api-keys.ts';
import { type Auth, principalOf } from '../auth.ts';
import {
  ALL_SCOPES,
  defaultScopes,
  type Grant,
  grantProblem,
  isFullGrant,
  normalizeScopes,
  scopesOfKey,
} from '../scopes.ts';
import type { HandlersOf } from './register.ts';

export interface ApiKeyRoutesDeps {
  store: ApiKeyStore & Pick<StoreQueries, 'setApiKeyQuotas'>;
  auth: Pick<Auth, 'evict'>;
}

type ApiKey = z.infer<typeof ApiKeySchema>;
type ApiKeyCreated = z.infer<typeof ApiKeyCreatedSchema>;
type CreateBody = z.infer<typeof ApiKeyCreateBody>;
type QuotasBody = z.infer<typeof ApiKeyQuotasBody>;

/** The API shape of a key: never the secret, never its hash. */
function toApiKey(key: StoredApiKey): ApiKey {
  const scopes = scopesOfKey(key);
  return {
    id: key.id,
    name: key.name,
    scopes,
    toolIds: key.toolIds,
    systemIds: key.systemIds,
    admin: key.admin,
    hostGateways: scopes.includes('gateways:host'),
    createdAt: new Date(key.createdAt).toISOString(),
    lastUsedAt: key.lastUsedAt === null ? null : new Date(key.lastUsedAt).toISOString(),
    quotas: key.quotas ?? NO_QUOTAS,
  };
}

const NO_QUOTAS: ApiKeyQuotas = { runsPerMinute: null, concurrentRuns: null };

/** The quotas a body asks for, over the key's current ones: a field given replaces, null removes. */
function quotasOf(asked: QuotasBody | undefined, current: ApiKeyQuotas = NO_QUOTAS): ApiKeyQuotas {
  return {
    runsPerMinute: asked?.runsPerMinute !== undefined ? asked.runsPerMinute : current.runsPerMinute,
    concurrentRuns: asked?.concurrentRuns !== undefined ? asked.concurrentRuns : current.concurrentRuns,
  };
}

const unique = (ids: readonly string[] | undefined) => (ids ? [...new Set(ids)] : null);

/**
 * What the body asks for. `admin: true` is every scope without restriction; `hostGateways: true` (the
 * agent key's older spelling) is gateways:host alone; no scopes at all keep the meaning a key created
 * that way had before scopes existed.
 */
function requestedGrant(body: CreateBody): Grant {
  const toolIds = unique(body.toolIds);
  const systemIds = unique(body.systemIds);
  if (body.admin) {
    if (toolIds || systemIds || body.scopes) throw KG_ERR_ADMIN_KEY_WITH_TOOLS();
    return { scopes: [...ALL_SCOPES], toolIds: null, systemIds: null };
  }
  if (body.hostGateways) {
    if (body.scopes) {
      throw KG_ERR_VALIDATION('API key', 'hostGateways: give "gateways:host" in scopes instead of both');
    }
    return { scopes: ['gateways:host'], toolIds, systemIds };
  }
  return {
    scopes: body.scopes ? normalizeScopes(body.scopes) : defaultScopes(toolIds !== null),
    toolIds,
    systemIds,
  };
}

/**
 * POST/GET /v1/api-keys and DELETE /v1/api-keys/:keyId (scope keys:admin, contract/api/routes.ts). A key can
 * grant only what it has, and revoke only keys it could have created.
 */
export function apiKeyHandlers(
  deps: ApiKeyRoutesDeps,
): HandlersOf<'createApiKey' | 'listApiKeys' | 'updateApiKey' | 'revokeApiKey'> {
  const { store, auth } = deps;
  // Revocations in this process run one at a time, so two concurrent requests cannot each revoke
  // one of the last two admin keys.
  const revocations = new KeyedLock();

  return {
    createApiKey: async ({ body }, request, reply) => {
      const grant = requestedGrant(body);
      const problem = grantProblem(principalOf(request), grant);
      if (problem) throw KG_ERR_GRANT_EXCEEDS_KEY('create', problem);
      const key = generateApiKey();
      const row: Omit<StoredApiKey, 'lastUsedAt'> = {
        id: newApiKeyId(),
        name: body.name,
        keyHash: hashApiKey(key),
        scopes: [...grant.scopes],
        toolIds: grant.toolIds && [...grant.toolIds],
        systemIds: grant.systemIds && [...grant.systemIds],
        admin: isFullGrant(grant),
        createdAt: new Date().toISOString(),
      };
      const quotas = quotasOf(body.quotas);
      if (quotas.runsPerMinute !== null || quotas.concurrentRuns !== null) row.quotas = quotas;
      await store.insertApiKey(row);
      const created: ApiKeyCreated = { ...toApiKey({ ...row, lastUsedAt: null }), key };
      return reply.status(201).send(created);
    },

    listApiKeys: async () => {
      const keys = await store.listApiKeys();
      return { data: keys.map(toApiKey) };
    },

    updateApiKey: async ({ params: { keyId }, body }, request) => {
      const target = (await store.listApiKeys()).find((key) => key.id === keyId);
      if (!target) throw KG_ERR_API_KEY_NOT_FOUND();
      // Changing a key is for keys that could have created it, as revoking is.
      const problem = grantProblem(principalOf(request), { ...target, scopes: scopesOfKey(target) });
      if (problem) throw KG_ERR_GRANT_EXCEEDS_KEY('update', problem);
      const quotas = quotasOf(body.quotas, target.quotas);
      if (!(await store.setApiKeyQuotas(keyId, quotas))) throw KG_ERR_API_KEY_NOT_FOUND();
      // This process applies the new quotas at once; other replicas within their key cache's lifetime.
      auth.evict(keyId);
      return toApiKey({ ...target, quotas });
    },

    revokeApiKey: async ({ params: { keyId } }, request) => {
      const revoker = principalOf(request);
      const revoke = async () => {
        const target = (await store.listApiKeys()).find((key) => key.id === keyId);
        if (!target) throw KG_ERR_API_KEY_NOT_FOUND();
        // Revoking a more powerful key (an admin key) is for keys that could have created it.
        const problem = grantProblem(revoker, { ...target, scopes: scopesOfKey(target) });
        if (problem) throw KG_ERR_GRANT_EXCEEDS_KEY('revoke', problem);
        if (target.admin && (await store.countApiKeys({ admin: true })) <= 1) throw KG_ERR_LAST_ADMIN_KEY();
        if (!(await store.revokeApiKey(keyId))) throw KG_ERR_API_KEY_NOT_FOUND();
        auth.evict(keyId);
        return { success: true };
      };
      return revocations.run('revoke', revoke);
    },
  };
}
