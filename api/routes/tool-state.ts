import type { ToolStateService } from '../../tools/state.ts';
import { assertToolAccess } from '../auth.ts';
import type { HandlersOf } from './register.ts';

/**
 * /v1/tools/{toolId}/state, as superglue's `sg tool state get/set/reset` call it: the scopes are in
 * contract/api/routes.ts; here the key's tool restriction (a tool it may not use answers 404 like a
 * missing one, whatever the body).
 */
export function toolStateHandlers(deps: {
  toolState: ToolStateService;
}): HandlersOf<'getToolState' | 'putToolState' | 'deleteToolState'> {
  const { toolState } = deps;
  return {
    getToolState: async ({ params }, request) => {
      assertToolAccess(request, params.toolId);
      return toolState.get(params.toolId);
    },

    putToolState: {
      authorize: ({ params }, request) => assertToolAccess(request, params.toolId),
      handle: async ({ params, body }) => toolState.replace(params.toolId, body.state),
    },

    deleteToolState: async ({ params }, request) => {
      assertToolAccess(request, params.toolId);
      return toolState.reset(params.toolId);
    },
  };
}
