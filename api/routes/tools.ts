import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ListToolsQuery } from '../../contract/api/bodies.ts';
import { KG_ERR_TOOL_NOT_FOUND } from '../../contract/api/errors.ts';
import { ToolCreateBody, ToolUpdateBody } from '../../contract/api/tool.ts';
import type { ToolService } from '../../tools/service.ts';
import { allowedSystemIds, allowedToolIds, assertMayCreateTool, assertToolAccess } from '../auth.ts';
import { parseInput } from '../validation.ts';

const ToolParams = z.object({ toolId: z.string().min(1) });
const TokenOnly = z.strictObject({ token: z.string().optional() });

/**
 * /v1/tools: the scopes each route needs are in contract/api/routes.ts; here the key's tool restriction (a tool it
 * may not use answers 404 like a missing one) and its systems (a saved tool may use only those).
 */
export function registerToolRoutes(app: FastifyInstance, deps: { tools: ToolService }): void {
  const { tools } = deps;

  app.get('/v1/tools', async (request) => {
    const query = parseInput(ListToolsQuery, request.query, 'query');
    return tools.list({ ...query, toolIds: allowedToolIds(request) });
  });

  app.post('/v1/tools', async (request, reply) => {
    parseInput(TokenOnly, request.query, 'query');
    const body = parseInput(ToolCreateBody, request.body, 'tool');
    assertMayCreateTool(request, body.id);
    return reply.status(201).send(await tools.create(body, { systemIds: allowedSystemIds(request) }));
  });

  app.get('/v1/tools/:toolId', async (request) => {
    const { toolId } = parseInput(ToolParams, request.params, 'path');
    assertToolAccess(request, toolId);
    const tool = await tools.get(toolId);
    if (!tool) throw KG_ERR_TOOL_NOT_FOUND(toolId);
    return tool;
  });

  app.put('/v1/tools/:toolId', async (request) => {
    const { toolId } = parseInput(ToolParams, request.params, 'path');
    assertToolAccess(request, toolId);
    parseInput(TokenOnly, request.query, 'query');
    const body = parseInput(ToolUpdateBody, request.body ?? {}, 'tool update');
    return tools.update(toolId, body, { systemIds: allowedSystemIds(request) });
  });

  app.delete('/v1/tools/:toolId', async (request) => {
    const { toolId } = parseInput(ToolParams, request.params, 'path');
    assertToolAccess(request, toolId);
    await tools.delete(toolId);
    return { success: true };
  });
}
