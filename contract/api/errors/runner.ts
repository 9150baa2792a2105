/**
 * Errors of the internal runner API (api/internal/): answers to runner Pods, which hold only their per-run
 * token.
 */
import { type CatalogEntry, errorArea } from './define.ts';

const { define, entries } = errorArea();

const RUNNER_REALM = { 'WWW-Authenticate': 'Bearer realm="kubeglue-internal"' };
export const KG_ERR_MISSING_RUN_TOKEN = define(
  'KG_ERR_MISSING_RUN_TOKEN',
  401,
  () => 'Missing run token: send Authorization: Bearer <token>',
  'Runner Pods only: a runner sends its per-run token (KUBEGLUE_RUN_TOKEN); nothing else may use the internal port.',
  RUNNER_REALM,
);
export const KG_ERR_INVALID_RUN_TOKEN = define(
  'KG_ERR_INVALID_RUN_TOKEN',
  401,
  () => 'Invalid run token, or its run is no longer running',
  'The run has ended or the token is not one kubeglue issued: the runner stops; nothing to do.',
  RUNNER_REALM,
);
export const KG_ERR_RUN_TOKEN_OTHER_RUN = define(
  'KG_ERR_RUN_TOKEN_OTHER_RUN',
  403,
  () => 'This token belongs to another run',
  "A runner may act only on its own run: check the Pod's KUBEGLUE_RUN_ID against its token Secret.",
);
export const KG_ERR_RUN_ATTEMPT_MISMATCH = define(
  'KG_ERR_RUN_ATTEMPT_MISMATCH',
  409,
  (attempt: number) => `Attempt ${attempt} is not the attempt this token was issued for`,
  "The run was handed to a newer attempt (this runner's Pod was given up): this runner's attempt is over; nothing to do.",
);
export const KG_ERR_RUN_EVENTS_GAP = define(
  'KG_ERR_RUN_EVENTS_GAP',
  409,
  (firstSeq: number, lastSeq: number) =>
    `Events refused: the batch starts at ${firstSeq}, but events were accepted only up to ${lastSeq}`,
  'The runner sends its events again from the last accepted one; nothing to do.',
);
export const KG_ERR_RUN_NOT_RUNNING = define(
  'KG_ERR_RUN_NOT_RUNNING',
  409,
  (runId: string) => `Run '${runId}' is no longer running`,
  'The run ended while its runner worked (cancelled, timed out, or decided by the operator): the runner stops; nothing to do.',
);
/** A runner asked for the OAuth token of a system its run's tool does not use. */
export const KG_ERR_RUN_SYSTEM_NOT_USED = define(
  'KG_ERR_RUN_SYSTEM_NOT_USED',
  403,
  (systemId: string) => `This run's tool does not use system '${systemId}'`,
  "A runner gets tokens only for its tool's systems: check the tool's steps.",
);
/** A request of a runner's run could not go before the run's deadline: its system's rate budget is taken. */
export const KG_ERR_RUN_BUDGET_EXHAUSTED = define(
  'KG_ERR_RUN_BUDGET_EXHAUSTED',
  409,
  (systemId: string, reason: string) => `system '${systemId}': ${reason}`,
  "The system's rateLimit admits fewer requests than its runs send before their deadlines: raise the run's timeout, " +
    'lower the load on the system, or raise its rateLimit if the system allows more (docs/operations.md).',
);
/** The API serving the internal port manages no OAuth tokens (started without OAuth). */
export const KG_ERR_RUN_TOKENS_UNAVAILABLE = define(
  'KG_ERR_RUN_TOKENS_UNAVAILABLE',
  409,
  (systemId: string) => `system '${systemId}': this API manages no OAuth tokens`,
  'Serve the internal port from kubeglue api, which manages OAuth tokens; this API was started without them.',
);
/** The API serving the internal port signs no identity tokens (started without an issuer). */
export const KG_ERR_RUN_IDENTITY_UNAVAILABLE = define(
  'KG_ERR_RUN_IDENTITY_UNAVAILABLE',
  409,
  () => 'this API signs no identity tokens',
  "Serve the internal port from kubeglue api, which signs the runs' identity tokens (docs/operations.md#outbound-identity).",
);
/** The run's order cannot be built, ever (timed out while queued, a system gone): the run was failed. */
export const KG_ERR_RUN_ORDER_REFUSED = define(
  'KG_ERR_RUN_ORDER_REFUSED',
  409,
  (reason: string) => reason,
  'The run was failed instead of started (it timed out while queued, or a system is gone); its error says why. Run the tool again.',
);

/** This area's codes in the order declared here (errors.ts puts the areas together into the catalog). */
export const RUNNER_ERRORS: readonly CatalogEntry[] = entries;
