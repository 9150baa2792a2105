import { type RunStatsDeps, runStats, statsWindow } from '../../runs/stats.ts';
import { principalOf } from '../auth.ts';
import type { HandlersOf } from './register.ts';

/** `GET /v1/stats/runs`: a time window's runs by bucket, status and tool, and the async runs waiting. */
export function runStatsHandlers(deps: RunStatsDeps): HandlersOf<'getRunStats'> {
  return {
    getRunStats: async ({ query }, request) =>
      runStats(deps, statsWindow(query, new Date()), principalOf(request)),
  };
}
