import { KG_ERR_SYSTEM_NOT_GRANTED, KG_ERR_SYSTEM_URL_CREDENTIALS } from '../../contract/api/errors.ts';
import type { System } from '../../contract/api/system.ts';
import type { DocumentationService } from '../../systems/documentation/service.ts';
import type { SystemService } from '../../systems/service.ts';
import { hasUrlCredentials } from '../../systems/url-credentials.ts';
import type { ToolService } from '../../tools/service.ts';
import { allowedSystemIds, assertSystemAccess, canUseSystem } from '../auth.ts';
import type { HandlersOf, RouteBinding } from './register.ts';

/**
 * A System's URL is stored in its resource and returned in clear: credentials written into it are refused
 * (rather than moved into the encrypted credentials, which would silently pick an authType for the user).
 */
function refuseUrlCredentials(url: string | undefined): void {
  if (url !== undefined && hasUrlCredentials(url)) throw KG_ERR_SYSTEM_URL_CREDENTIALS();
}

/**
 * POST/GET /v1/systems and GET/PUT/DELETE /v1/systems/:systemId?environment=. The scopes are declared in
 * contract/api/routes.ts; a key limited to some systems (systemIds) sees only those: another answers 404 like a
 * system that does not exist, and it may not create one outside its list.
 */
export function systemHandlers(deps: {
  systems: SystemService;
  tools: Pick<ToolService, 'usingSystem'>;
  documentation?: DocumentationService | undefined;
}): HandlersOf<
  | 'createSystem'
  | 'listSystems'
  | 'getSystem'
  | 'updateSystem'
  | 'patchSystem'
  | 'listCredentialSets'
  | 'deleteSystem'
> {
  const { systems, tools, documentation } = deps;
  // Documentation state and the API-key placement decision join the answers when processing is on.
  const present = (system: System) => (documentation ? documentation.present(system) : system);

  // PUT and PATCH are the same partial update: only the fields given change.
  const update: RouteBinding<'updateSystem' | 'patchSystem'> = {
    authorize: ({ params, query }, request) =>
      assertSystemAccess(request, params.systemId, query.environment),
    handle: async ({ params: { systemId }, query: { environment }, body }) => {
      refuseUrlCredentials(body.url);
      const updated = await systems.update(systemId, environment, body);
      const data = documentation
        ? await documentation.afterWrite(updated, {
            created: false,
            documentationUrlGiven: body.documentationUrl !== undefined,
          })
        : updated;
      return { success: true, data };
    },
  };

  // Single-system answers use superglue's envelope `{ success, data }`: its clients read `data`.
  return {
    createSystem: async ({ body }, request, reply) => {
      // Before the lookup: 409 (exists) against 201 would tell a limited key which ids exist.
      if (!canUseSystem(request, body.id)) throw KG_ERR_SYSTEM_NOT_GRANTED(body.id);
      refuseUrlCredentials(body.url);
      const created = await systems.create(body);
      const data = documentation
        ? await documentation.afterWrite(created, { created: true, documentationUrlGiven: true })
        : created;
      return reply.status(201).send({ success: true, data });
    },

    listSystems: async ({ query: { page, limit, systemId } }, request) => {
      const allowed = allowedSystemIds(request);
      // ?systemId= narrows what the key may see, never widens it.
      const systemIds =
        systemId === undefined ? allowed : allowed === null || allowed.includes(systemId) ? [systemId] : [];
      const listed = await systems.list({ page, limit, systemIds });
      return documentation ? { ...listed, data: await documentation.presentAll(listed.data) } : listed;
    },

    getSystem: async ({ params: { systemId }, query: { environment } }, request) => {
      assertSystemAccess(request, systemId, environment);
      return { success: true, data: await present(await systems.get(systemId, environment)) };
    },

    updateSystem: update,
    patchSystem: update,

    // superglue's clients read a system's credential keys from its credential sets; kubeglue has one per
    // variant, shown here read-only (keys, never values).
    listCredentialSets: async ({ query: { systemId } }, request) => {
      const { data } = await systems.list({
        page: 1,
        limit: Number.MAX_SAFE_INTEGER,
        systemIds: allowedSystemIds(request),
      });
      const listed = data.filter((system) => systemId === undefined || system.id === systemId);
      const items = listed.flatMap((system) => {
        const keys = Object.keys(system.credentials);
        if (keys.length === 0) return [];
        const variants = data.filter((other) => other.id === system.id);
        const isDefault =
          system.environment === 'prod' || !variants.some((other) => other.environment === 'prod');
        return [
          {
            id: `${system.id}:${system.environment}`,
            name: `${system.name ?? system.id} (${system.environment})`,
            systemId: system.id,
            environment: system.environment,
            credentialKeys: keys.map((key) => ({ key, hasValue: true })),
            missingRequiredCredentialKeys: [],
            isOwner: true,
            isDefault,
            permission: 'editor' as const,
            ...(system.createdAt ? { createdAt: system.createdAt } : {}),
            ...(system.updatedAt ? { updatedAt: system.updatedAt } : {}),
          },
        ];
      });
      return { success: true, data: { items } };
    },

    deleteSystem: async ({ params: { systemId }, query: { environment, force } }, request) => {
      // As SystemService.delete answers an unknown id: without the environment.
      assertSystemAccess(request, systemId);
      const deleted = await systems.delete(systemId, environment, {
        force,
        usedBy: (id) => tools.usingSystem(id),
      });
      await documentation?.forget(systemId, environment);
      return deleted;
    },
  };
}
