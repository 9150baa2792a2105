import type { FastifyRequest } from 'fastify';
import { stringify } from 'yaml';
import { KG_ERR_TOOL_NOT_FOUND } from '../../contract/api/errors.ts';
import { MANIFEST_YAML } from '../../contract/api/routes.ts';
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
}): HandlersOf<'listTools' | 'createTool' | 'getTool' | 'getToolManifest' | 'updateTool' | 'deleteTool'> {
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

    getToolManifest: async ({ params }, request, reply) => {
      assertToolAccess(request, params.toolId);
      const manifest = await tools.manifest(params.toolId);
      if (!manifest) throw KG_ERR_TOOL_NOT_FOUND(params.toolId);
      if (!prefersYaml(request)) return manifest;
      // Long lines are not folded: a transform's code reads as written.
      return reply.type(MANIFEST_YAML).send(stringify(manifest, { lineWidth: 0 }));
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

const YAML_TYPES = new Set([MANIFEST_YAML, 'application/x-yaml', 'text/yaml']);

/**
 * Whether the Accept header asks for YAML: it names a YAML type with a higher q than application/json
 * (wildcards choose nothing: a browser or curl gets JSON, like from every other route).
 */
function prefersYaml(request: FastifyRequest): boolean {
  let yaml = 0;
  let json = 0;
  for (const part of (request.headers.accept ?? '').split(',')) {
    const [type = '', ...params] = part.split(';').map((piece) => piece.trim().toLowerCase());
    const q = Number(params.find((param) => param.startsWith('q='))?.slice(2) ?? '1');
    const weight = Number.isFinite(q) ? q : 0;
    if (YAML_TYPES.has(type)) yaml = Math.max(yaml, weight);
    if (type === 'application/json') json = Math.max(json, weight);
  }
  return yaml > json;
}
