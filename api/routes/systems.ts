import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { KG_ERR_SYSTEM_NOT_GRANTED, KG_ERR_SYSTEM_URL_CREDENTIALS } from '../../contract/api/errors.ts';
import { ROUTES } from '../../contract/api/routes.ts';
import { type System, SystemCreateBody, SystemUpdateBody } from '../../contract/api/system.ts';
import type { DocumentationService } from '../../systems/documentation/service.ts';
import type { SystemService } from '../../systems/service.ts';
import { hasUrlCredentials } from '../../systems/url-credentials.ts';
import type { ToolService } from '../../tools/service.ts';
import { allowedSystemIds, assertSystemAccess, canUseSystem } from '../auth.ts';
import { parseInput } from '../validation.ts';

const SystemParams = z.object({ systemId: z.string().min(1) });
const EnvironmentQuery = z.object({ environment: z.enum(['dev', 'prod']).optional() });
const PageQuery = z.object({ page: z.number().int(), limit: z.number().int() });

/**
 * A System's URL is stored in its resource and returned in clear: credentials written into it are refused
 * (rather than moved into the encrypted credentials, which would silently pick an authType for the user).
 */
function refuseUrlCredentials(url: string | undefined): void {
  if (url !== undefined && hasUrlCredentials(url)) throw KG_ERR_SYSTEM_URL_CREDENTIALS();
}

function queryOf(operationId: string): z.ZodType {
  const query = ROUTES.find((route) => route.operationId === operationId)?.query;
  if (!query) throw new Error(`route table has no query schema for ${operationId}`);
  return query;
}

/**
 * POST/GET /v1/systems and GET/PUT/DELETE /v1/systems/:systemId?environment=. The scopes are declared in
 * contract/api/routes.ts; a key limited to some systems (systemIds) sees only those: another answers 404 like a
 * system that does not exist, and it may not create one outside its list.
 */
export function registerSystemRoutes(
  app: FastifyInstance,
  deps: {
    systems: SystemService;
    tools: Pick<ToolService, 'usingSystem'>;
    documentation?: DocumentationService | undefined;
  },
): void {
  const { systems, tools, documentation } = deps;
  // Documentation state and the API-key placement decision join the answers when processing is on.
  const present = (system: System) => (documentation ? documentation.present(system) : system);
  const createQuery = queryOf('createSystem');
  const listQuery = queryOf('listSystems');
  const getQuery = queryOf('getSystem');
  const updateQuery = queryOf('updateSystem');
  const deleteQuery = queryOf('deleteSystem');
  const credentialsQuery = queryOf('listCredentialSets');

  // Single-system answers use superglue's envelope `{ success, data }`: its clients read `data`.
  app.post('/v1/systems', async (request, reply) => {
    parseInput(createQuery, request.query, 'query');
    const body = parseInput(SystemCreateBody, request.body, 'system');
    // Before the lookup: 409 (exists) against 201 would tell a limited key which ids exist.
    if (!canUseSystem(request, body.id)) throw KG_ERR_SYSTEM_NOT_GRANTED(body.id);
    refuseUrlCredentials(body.url);
    const created = await systems.create(body);
    const data = documentation
      ? await documentation.afterWrite(created, { created: true, documentationUrlGiven: true })
      : created;
    return reply.status(201).send({ success: true, data });
  });

  app.get('/v1/systems', async (request) => {
    const query = PageQuery.parse(parseInput(listQuery, request.query, 'query'));
    const page = await systems.list({ ...query, systemIds: allowedSystemIds(request) });
    return documentation ? { ...page, data: await documentation.presentAll(page.data) } : page;
  });

  app.get('/v1/systems/:systemId', async (request) => {
    const { systemId } = parseInput(SystemParams, request.params, 'path');
    const { environment } = EnvironmentQuery.parse(parseInput(getQuery, request.query, 'query'));
    assertSystemAccess(request, systemId, environment);
    return { success: true, data: await present(await systems.get(systemId, environment)) };
  });

  // PUT and PATCH are the same partial update: only the fields given change.
  const update = async (request: FastifyRequest) => {
    const { systemId } = parseInput(SystemParams, request.params, 'path');
    const { environment } = EnvironmentQuery.parse(parseInput(updateQuery, request.query, 'query'));
    assertSystemAccess(request, systemId, environment);
    const body = parseInput(SystemUpdateBody, request.body ?? {}, 'system update');
    refuseUrlCredentials(body.url);
    const updated = await systems.update(systemId, environment, body);
    const data = documentation
      ? await documentation.afterWrite(updated, {
          created: false,
          documentationUrlGiven: body.documentationUrl !== undefined,
        })
      : updated;
    return { success: true, data };
  };
  app.put('/v1/systems/:systemId', update);
  app.patch('/v1/systems/:systemId', update);

  // superglue's clients read a system's credential keys from its credential sets; kubeglue has one per
  // variant, shown here read-only (keys, never values).
  app.get('/v1/credentials', async (request) => {
    const { systemId } = z
      .object({ systemId: z.string().optional() })
      .parse(parseInput(credentialsQuery, request.query, 'query'));
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
  });

  app.delete('/v1/systems/:systemId', async (request) => {
    const { systemId } = parseInput(SystemParams, request.params, 'path');
    const { environment, force } = EnvironmentQuery.extend({ force: z.boolean() }).parse(
      parseInput(deleteQuery, request.query, 'query'),
    );
    // As SystemService.delete answers an unknown id: without the environment.
    assertSystemAccess(request, systemId);
    const deleted = await systems.delete(systemId, environment, {
      force,
      usedBy: (id) => tools.usingSystem(id),
    });
    await documentation?.forget(systemId, environment);
    return deleted;
  });
}
