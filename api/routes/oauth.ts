import { KG_ERR_OAUTH_STATE_INVALID } from '../../contract/api/errors.ts';
import type { SystemOAuth } from '../../systems/oauth/service.ts';
import { assertSystemAccess, principalOf } from '../auth.ts';
import type { HandlersOf } from './register.ts';

/**
 * GET /v1/systems/:systemId/oauth/authorize?environment= (systems:write, a system the key may use) and the provider's
 * redirect target GET /v1/oauth/callback (no key: the single-use state is the credential).
 */
export function oauthHandlers(deps: {
  oauth: SystemOAuth;
}): HandlersOf<'authorizeSystemOAuth' | 'oauthCallback'> {
  const { oauth } = deps;
  return {
    authorizeSystemOAuth: async ({ params: { systemId }, query: { environment } }, request) => {
      assertSystemAccess(request, systemId, environment);
      return { success: true, data: await oauth.authorize(systemId, environment, principalOf(request).id) };
    },

    oauthCallback: async ({ query }) => {
      if (query.error) {
        return oauth.tokens.denyAuthorization(query.state, query.error, query.error_description);
      }
      if (!query.code || !query.state) throw KG_ERR_OAUTH_STATE_INVALID();
      return { success: true, data: await oauth.callback(query.code, query.state) };
    },
  };
}
