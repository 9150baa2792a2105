/** The answers and parameters that routes of several tags share. */
import { z } from 'zod';
import { ErrorBody } from '../bodies.ts';
import { Run } from '../run.ts';
import type { RouteResponse } from './spec.ts';

export const failure = (description: string): RouteResponse => ({ description, schema: ErrorBody });
export const notFound = failure('Not found');
export const restricted = failure('The API key lacks the scope, or is limited to some tools');
export const badRequest = failure('Invalid request');
export const adminOnly = failure('The key lacks keys:admin');
export const tooManySyncRuns = failure('Too many synchronous runs at once; see Retry-After');
/** How a PUT of a stored thing is refused: a bad body, nothing there, or a write that came first. */
export const updateRefused = {
  400: badRequest,
  404: notFound,
  409: failure('Concurrent update; retry'),
} as const;
export const syncRunFinished = {
  description: 'Synchronous run finished; includes data and stepResults',
  schema: Run,
};
/**
 * How a route that starts a run with `options` refuses the request (bad body or options, an archived tool,
 * a webhookUrl carrying credentials or chaining to a tool the key may not use): the same checks on every
 * such route (POST /tools/{toolId}/run, POST /runs/{runId}/resume).
 */
const runOptionsRefused = {
  400: failure('Invalid request, archived tool, or credentials in options.webhookUrl'),
  403: failure('options.webhookUrl chains to a tool this API key may not use'),
} as const;

/**
 * What a route that starts a run with `options` answers besides its own refusals: the finished run when
 * synchronous, the run as `accepted` when asynchronous, and the refusals of its request (runOptionsRefused).
 */
export const runStarted = (accepted: string) =>
  ({
    200: syncRunFinished,
    202: { description: accepted, schema: Run },
    ...runOptionsRefused,
  }) as const;

/**
 * A parameter of a route that never refused one given twice (it arrives as an array): it reads as absent
 * (a webhook challenge given twice is no challenge: 400 KG_ERR_NO_CHALLENGE).
 */
export const lenientParameter = z.string().optional().catch(undefined);
