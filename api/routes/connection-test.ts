import type { RunService } from '../../runs/service.ts';
import type { SystemService } from '../../systems/service.ts';
import { assertSystemAccess, principalOf } from '../auth.ts';
import type { HandlersOf } from './register.ts';
import { clientGone } from './runs.ts';

/**
 * POST /v1/systems/:systemId/test?environment=: one harmless read against the variant (runs/connection-test.ts).
 * A system the key may not use answers 404 like one that does not exist; the read runs as the key's run.
 */
export function connectionTestHandlers(deps: {
  systems: Pick<SystemService, 'get'>;
  runs: Pick<RunService, 'testConnection'>;
}): HandlersOf<'testSystemConnection'> {
  const { systems, runs } = deps;
  return {
    testSystemConnection: async ({ params: { systemId }, query: { environment } }, request, reply) => {
      assertSystemAccess(request, systemId, environment);
      const system = await systems.get(systemId, environment);
      return runs.testConnection({
        system,
        caller: principalOf(request),
        traceId: request.traceId,
        signal: clientGone(reply),
      });
    },
  };
}
