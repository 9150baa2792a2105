import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { KG_ERR_OAUTH_STATE_INVALID } from '../../contract/api/errors.ts';
import { OAuthAuthorizeQuery, OAuthCallbackQuery } from '../../contract/api/oauth.ts';
import type { SystemOAuth } from '../../systems/oauth/service.ts';
import { assertSystemAccess, principalOf } from '../auth.ts';
import { parseInput } from '../validation.ts';

const SystemParams = z.object({ systemId: z.string().min(1) });

/**
 * GET /v1/systems/:systemId/oauth/authorize?environment= (systems:write, a system the key may use) and the provider's
 * redirect target GET /v1/oauth/callback (no key: the single-use state is the credential).
 */
export function registerOAuthRoutes(app: FastifyInstance, deps: { oauth: SystemOAuth }): void {
  const { oauth } = deps;

  app.get('/v1/systems/:systemId/oauth/authorize', async (request) => {
    const { systemId } = parseInput(SystemParams, request.params, 'path');
    const { environment } = parseInput(OAuthAuthorizeQuery, request.query, 'query');
    assertSystemAccess(request, systemId, environment);
    return { success: true, data: await oauth.authorize(systemId, environment, principalOf(request).id) };
  });

  app.get('/v1/oauth/callback', async (request) => {
    const query = parseInput(OAuthCallbackQuery, request.query, 'query');
    if (query.error) {
      return oauth.tokens.denyAuthorization(query.state, query.error, query.error_description);
    }
    if (!query.code || !query.state) throw KG_ERR_OAUTH_STATE_INVALID();
    return { success: true, data: await oauth.callback(query.code, query.state) };
  });
}
