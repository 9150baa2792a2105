import type { FastifyInstance } from 'fastify';
import type { Me } from '../../contract/api/bodies.ts';
import { ROUTES } from '../../contract/api/routes.ts';
import { principalOf } from '../auth.ts';
import { parseInput } from '../validation.ts';

/** `GET /v1/me`: who the calling key is and what it may do (superglue's `sg whoami` reads userId and roleIds). */
export function registerMeRoute(app: FastifyInstance): void {
  const query = ROUTES.find((route) => route.operationId === 'getMe')?.query;
  if (!query) throw new Error('route table has no query schema for getMe');
  app.get('/v1/me', async (request): Promise<Me> => {
    parseInput(query, request.query, 'query');
    const { id, name, admin, scopes, toolIds, systemIds } = principalOf(request);
    return { id, name, admin, scopes, toolIds, systemIds, userId: id, roleIds: [admin ? 'admin' : 'member'] };
  });
}
