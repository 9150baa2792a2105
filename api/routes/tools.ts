import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ListToolsQuery } from '../../crds/api.ts';
import { ToolCreateBody, ToolUpdateBody } from '../../crds/tool.ts';
import { KG_ERR_TOOL_NOT_FOUND } from '../../runs/errors.ts';
import { allowedToolIds, assertToolAccess, requireUnrestricted } from '../auth.ts';
import type { ToolService } from '../tools.ts';
import { parseInput } from '../validation.ts';

const ToolParams = z.object({ toolId: z.string().min(1) });
const TokenOnly = z.strictObject({ token: z.string().optional() });

export function registerToolRoutes(app: FastifyInstance, deps: { tools: ToolService }): void {
  const { tools } = deps;

  app.get('/v1/tools', async (request) => {
    const query = parseInput(ListToolsQuery, request.query, 'query');
    return tools.list({ ...query, toolIds: allowedToolIds(request) });
  });

  app.post('/v1/tools', async (request, reply) => {
    requireUnrestricted(request);
    parseInput(TokenOnly, request.query, 'query');
    const body = parseInput(ToolCreateBody, request.body, 'tool');
    return reply.status(201).send(await tools.create(body));
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
    // A tool the key may not see answers 404 like a missing one; its own tools it may not change (403).
    assertToolAccess(request, toolId);
    requireUnrestricted(request);
    parseInput(TokenOnly, request.query, 'query');
    const body = parseInput(ToolUpdateBody, request.body ?? {}, 'tool update');
    return tools.update(toolId, body);
  });

  app.delete('/v1/tools/:toolId', async (request) => {
    const { toolId } = parseInput(ToolParams, request.params, 'path');
    assertToolAccess(request, toolId);
    requireUnrestricted(request);
    await tools.delete(toolId);
    return { success: true };
  });
}
