import type { SaveAsTestDeps } from '../../runs/save-as-test.ts';
import { saveRunAsTest } from '../../runs/save-as-test.ts';
import { principalOf } from '../auth.ts';
import type { HandlersOf } from './register.ts';

/** `POST /v1/tools/{toolId}/tests`: a recorded run saved as a test of its tool (runs/save-as-test.ts). */
export function toolTestHandlers(deps: SaveAsTestDeps): HandlersOf<'addToolTest'> {
  return {
    addToolTest: async ({ params, body }, request, reply) =>
      reply.status(201).send(
        await saveRunAsTest(deps, {
          toolId: params.toolId,
          fromRun: body.fromRun,
          name: body.name,
          caller: principalOf(request),
        }),
      ),
  };
}
