/**
 * `POST /mcp`, the Model Context Protocol endpoint (server.ts says what it serves and how). The SDK is
 * loaded on the first MCP request, not at start: it costs a server ~9 MiB resident that an API nobody
 * reaches over MCP should not pay.
 */
import type { FastifyInstance } from 'fastify';
import { MCP_ROUTE } from '../../contract/api/routes.ts';
import type { McpDeps } from './server.ts';

export type { McpDeps } from './server.ts';

/** Registers `POST /mcp`. */
export function installMcp(app: FastifyInstance, deps: McpDeps): void {
  let server: Promise<typeof import('./server.ts')> | undefined;
  app.route({
    method: MCP_ROUTE.method,
    url: MCP_ROUTE.path,
    handler: async (request, reply) => {
      server ??= import('./server.ts');
      return (await server).answerMcp(deps, request, reply);
    },
  });
}
