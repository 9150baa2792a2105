import { KG_ERR_TOOL_NOT_FOUND } from '../../contract/api/errors.ts';
import type { ToolService } from '../../tools/service.ts';
import type { ToolStateService } from '../../tools/state.ts';
import { allowedSystemIds, allowedToolIds, assertMayCreateTool, assertToolAccess } from '../auth.ts';
import type { HandlersOf } from './register.ts';

/**
 * /v1/tools: the scopes each route needs are in contract/api/routes.ts; here the key's tool restriction (a tool it
 * may not use answers 404 like a missing one) and its systems (a saved tool may use only those).
 */
export function toolHandlers(deps: {
  tools: ToolService;
  /** The state of a deleted tool goes with it. */
  toolState?: Pick<ToolStateService, 'drop'>;
}): HandlersOf<'listTools' | 'createTool' | 'getTool' | 'updateTool' | 'deleteTool'> {
  const { tools, toolState } = deps;
  return {
    listTools: async ({ query }, request) => tools.list({ ...query, toolIds: allowedToolIds(request) }),

    createTool: async ({ body }, request, reply) => {
      assertMayCreateTool(request, body.id);
      return reply.status(201).send(await tools.create(body, { systemIds: allowedSystemIds(request) }));
    },

    getTool: async ({ params }, request) => {
      assertToolAccess(request, params.toolId);
      const tool = await tools.get(params.toolId);
      if (!tool) throw KG_ERR_TOOL_NOT_FOUND(params.toolId);
      return tool;
    },

    updateTool: {
      authorize: ({ params }, request) => assertToolAccess(request, params.toolId),
      handle: async ({ params, body }, request) =>
        tools.update(params.toolId, body, { systemIds: allowedSystemIds(request) }),
    },

    deleteTool: async ({ params }, request) => {
      assertToolAccess(request, params.toolId);
      await tools.delete(params.toolId);
      await toolState?.drop(params.toolId);
      return { success: true };
    },
  };
}
