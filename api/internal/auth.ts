import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import {
  KG_ERR_INVALID_RUN_TOKEN,
  KG_ERR_MISSING_RUN_TOKEN,
  KG_ERR_RUN_ATTEMPT_MISMATCH,
  KG_ERR_RUN_NOT_RUNNING,
  KG_ERR_RUN_TOKEN_OTHER_RUN,
} from '../../contract/api/errors.ts';
import { hashRunToken } from '../../runs/run-token.ts';
import type { StoredRun, StoreQueries, TerminalRunStatus } from '../../store/index.ts';
import { parseInput } from '../validation.ts';

/** The runner behind a request: the run and attempt its token was issued for. */
export type RunnerIdentity =
  | { live: true; runId: string; attempt: number }
  /** The token's run has ended: the runner may only be told so. */
  | { live: false; runId: string; attempt: number; status: TerminalRunStatus };

const BEARER = /^bearer[ \t]+(\S{1,512})[ \t]*$/i;

/**
 * Who is calling: the token is hashed and its runner attempt looked up by hash. The comparison that decides
 * happens on SHA-256 digests inside an index, so response timing reveals at most a prefix of a digest,
 * which does not help forge a token. `ended`: whether a token of a run that has ended is recognised
 * (for answers that only tell the runner to stop); otherwise only a running run's token is.
 */
export async function identifyRunner(
  store: Pick<StoreQueries, 'findRunnerAttemptByToken' | 'findEndedRunnerAttemptByToken'>,
  request: FastifyRequest<{ Params: { runId: string } }>,
  opts: { ended: boolean },
): Promise<RunnerIdentity> {
  const match = BEARER.exec(request.headers.authorization ?? '');
  if (!match?.[1]) throw KG_ERR_MISSING_RUN_TOKEN();
  const tokenHash = hashRunToken(match[1]);
  let identity: RunnerIdentity | undefined;
  const live = await store.findRunnerAttemptByToken(tokenHash);
  if (live) identity = { live: true, ...live };
  else if (opts.ended) {
    const ended = await store.findEndedRunnerAttemptByToken(tokenHash);
    if (ended) identity = { live: false, ...ended };
  }
  if (!identity) throw KG_ERR_INVALID_RUN_TOKEN();
  if (identity.runId !== request.params.runId) throw KG_ERR_RUN_TOKEN_OTHER_RUN();
  return identity;
}

/** The attempt a body names must be the token's: an older attempt's runner holds no valid token. */
export function assertAttempt(identity: RunnerIdentity, attempt: number): void {
  if (attempt !== identity.attempt) throw KG_ERR_RUN_ATTEMPT_MISMATCH(attempt);
}

/**
 * A running run's runner asking for something with a body (a token, a budget): the token is a running
 * run's, the body names the token's attempt, and the run still runs. The run and the body.
 */
export async function runningRunAsks<T extends z.ZodType<{ attempt: number }>>(
  store: Pick<StoreQueries, 'findRunnerAttemptByToken' | 'findEndedRunnerAttemptByToken' | 'getRun'>,
  request: FastifyRequest<{ Params: { runId: string } }>,
  ask: { schema: T; what: string },
): Promise<{ run: StoredRun; body: z.infer<T> }> {
  const identity = await identifyRunner(store, request, { ended: false });
  const body = parseInput(ask.schema, request.body, ask.what);
  assertAttempt(identity, body.attempt);
  const run = await store.getRun(identity.runId);
  if (run?.status !== 'running') throw KG_ERR_RUN_NOT_RUNNING(identity.runId);
  return { run, body };
}
