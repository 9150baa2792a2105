/**
 * Which streams a runner Pod may open through the gateway relay. A runner Pod holds nothing but its
 * run's token, so the token must belong to that run while it is running, and the tunnel and target must
 * be those of one of the run's systems: a tool cannot reach a gateway its systems do not name, and a
 * token of an ended run opens nothing.
 */
import { hashRunToken } from '../../runs/run-token.ts';
import type { ExecutionMode, StoredRun } from '../../store/index.ts';

export interface RunnerStreamRequest {
  runId: string;
  token: string;
  tunnelId: string;
  target: string;
}

/** Undefined when the stream may open, else why not (told to the runner, which puts it in the step error). */
export type RunnerStreamCheck = (request: RunnerStreamRequest) => Promise<string | undefined>;

export interface RunnerAccessSources {
  findRunnerAttemptByToken(tokenHash: string): Promise<{ runId: string } | undefined>;
  getRun(runId: string): Promise<Pick<StoredRun, 'systemIds' | 'executionMode'> | undefined>;
  gatewaysForRun(
    systemIds: readonly string[],
    mode: ExecutionMode,
  ): Promise<{ tunnelId: string; target: string }[]>;
}

/**
 * Asked for every stream, not cached: a stream costs a round trip to the agent anyway, and an ended run's
 * Pod must lose access at once.
 */
export function runnerStreamCheck(sources: RunnerAccessSources): RunnerStreamCheck {
  return async ({ runId, token, tunnelId, target }) => {
    const attempt = await sources.findRunnerAttemptByToken(hashRunToken(token));
    if (attempt?.runId !== runId) return `the token of run ${runId} is not valid, or the run has ended`;
    const run = await sources.getRun(runId);
    if (!run) return `run ${runId} does not exist`;
    const gateways = await sources.gatewaysForRun(run.systemIds, run.executionMode ?? 'prod');
    if (!gateways.some((g) => g.tunnelId === tunnelId && g.target === target))
      return `run ${runId} has no system behind gateway ${tunnelId}, target '${target}'`;
    return undefined;
  };
}
