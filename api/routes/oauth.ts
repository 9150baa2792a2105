import { isApiError, KG_ERR_OAUTH_STATE_INVALID } from '../../contract/api/errors.ts';
import { returnLocation } from '../../systems/oauth/return-to.ts';
import type { SystemOAuth } from '../../systems/oauth/service.ts';
import { assertSystemAccess, principalOf } from '../auth.ts';
import type { HandlersOf } from './register.ts';

/**
 * GET /v1/systems/:systemId/oauth/authorize?environment=&returnTo= (systems:write, a system the key may use)
 * and the provider's redirect target GET /v1/oauth/callback (no key: the single-use state is the
 * credential). A flow started with returnTo ends with a redirect back there (the dashboard's system page),
 * saying whether it connected; otherwise the callback answers JSON.
 */
export function oauthHandlers(deps: {
  oauth: SystemOAuth;
}): HandlersOf<'authorizeSystemOAuth' | 'oauthCallback'> {
  const { oauth } = deps;
  return {
    authorizeSystemOAuth: async ({ params: { systemId }, query: { environment, returnTo } }, request) => {
      assertSystemAccess(request, systemId, environment);
      const started = await oauth.authorize(systemId, environment, principalOf(request).id, returnTo);
      return { success: true, data: started };
    },

    oauthCallback: async ({ query }, _request, reply) => {
      // Taken first, whatever the provider answered: a state is never usable twice.
      const flow = query.state ? await oauth.tokens.takeAuthorization(query.state) : undefined;
      const back = flow?.sealed.returnTo;
      try {
        if (query.error) throw oauth.tokens.denied(query.error, query.error_description);
        if (!query.code || !flow) throw KG_ERR_OAUTH_STATE_INVALID();
        const data = await oauth.callback(query.code, flow);
        if (back) return reply.redirect(returnLocation(back, { connected: true }), 303);
        return { success: true, data };
      } catch (error) {
        if (back && isApiError(error)) {
          return reply.redirect(returnLocation(back, { connected: false, code: error.code }), 303);
        }
        throw error;
      }
    },
  };
}
