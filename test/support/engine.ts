import { createEngineDeps } from '../../engine/deps.ts';
import { closeHttpAgent } from '../../engine/protocols/http.ts';
import type { EngineDeps } from '../../engine/types.ts';
import { useStarted } from './fixture.ts';

/** The real engine's dependencies (sandbox, protocols) for the tests of the enclosing block, closed after them. */
export function useEngineDeps(): { deps: EngineDeps } {
  return useStarted(
    () => createEngineDeps(),
    async ({ sandbox }) => {
      sandbox.dispose();
      await closeHttpAgent();
    },
  );
}
