/**
 * Errors of runs: not found, id conflicts, cancel, chains, the systems a run needs, the sync limit, paging
 * the list.
 */
import { type CatalogEntry, errorArea } from './define.ts';

const { define, entries } = errorArea();

/** Also the answer for a run of a tool the key may not use. */
export const KG_ERR_RUN_NOT_FOUND = define(
  'KG_ERR_RUN_NOT_FOUND',
  404,
  (runId: string) => `Run '${runId}' not found`,
  'Check the run id: GET /v1/runs lists runs. Runs are deleted after KUBEGLUE_RUN_RETENTION, and a key limited to tools sees only their runs.',
);
export const KG_ERR_RUN_ID_CONFLICT = define(
  'KG_ERR_RUN_ID_CONFLICT',
  409,
  (runId: string) => `Run id '${runId}' is already used by another tool or other inputs`,
  'Choose a new runId: a repeated runId returns the existing run only with the same tool and inputs.',
);
export const KG_ERR_RUN_NOT_CANCELLABLE = define(
  'KG_ERR_RUN_NOT_CANCELLABLE',
  400,
  (runId: string, status: 'success' | 'failed') =>
    `Run '${runId}' already ${status === 'success' ? 'succeeded' : 'failed'}; only running runs can be cancelled`,
  'Nothing to cancel: the run already succeeded or failed (only running runs can be cancelled; cancelling an aborted run answers 200).',
);
/** `GET /v1/runs/{runId}/recording` of a run that has none (yet, at all, or any longer). */
export const KG_ERR_RUN_NOT_RECORDED = define(
  'KG_ERR_RUN_NOT_RECORDED',
  404,
  (runId: string, why: 'running' | 'not-recorded' | 'removed') =>
    why === 'running'
      ? `Run '${runId}' is still running; its recording is stored when it ends`
      : why === 'removed'
        ? `The recording of run '${runId}' is no longer kept (result retention removed it with the run's results)`
        : `Run '${runId}' recorded nothing: it was not started with options.record, and its tool does not set record`,
  'Start the run with {"options": {"record": true}} (or set "record": true on the tool) to record its exchanges; a recording is kept as long as the run\'s results (KUBEGLUE_RESULT_RETENTION).',
);
/** `POST /v1/runs/{runId}/resume` of a run that did not fail: there is no failed step to start at. */
export const KG_ERR_RUN_NOT_RESUMABLE = define(
  'KG_ERR_RUN_NOT_RESUMABLE',
  409,
  (runId: string, status: 'success' | 'running') =>
    `Run '${runId}' ${status === 'success' ? 'succeeded' : 'is still running'}; only a failed or aborted (cancelled) run can be resumed`,
  'Resume a run that failed or was aborted. To run a tool that succeeded again, use POST /v1/tools/{id}/run; wait for (or cancel) a run still running.',
);
/**
 * The steps a resume would reuse have no stored results in full: retention removed them, the run stored
 * none, or they were stored without their data (the run's result was larger than its bound).
 */
export const KG_ERR_RUN_RESULTS_NOT_STORED = define(
  'KG_ERR_RUN_RESULTS_NOT_STORED',
  409,
  (runId: string, reason: string) =>
    `Run '${runId}' cannot be resumed: ${reason}; its earlier steps cannot be reused`,
  "Run the tool again from its first step (POST /v1/tools/{id}/run with the run's inputs). Results are kept for KUBEGLUE_RESULT_RETENTION; a run whose result exceeded KUBEGLUE_MAX_RESULT_BYTES keeps its step results without data.",
);
/** `POST /v1/runs/{runId}/replay` of a run with no recording to answer from. */
export const KG_ERR_RUN_NOT_REPLAYABLE = define(
  'KG_ERR_RUN_NOT_REPLAYABLE',
  409,
  (runId: string, why: 'running' | 'not-recorded' | 'removed' | 'tool-gone') =>
    why === 'running'
      ? `Run '${runId}' is still running; it can be replayed once it ends`
      : why === 'removed'
        ? `Run '${runId}' cannot be replayed: its recording is no longer kept (result retention removed it)`
        : why === 'tool-gone'
          ? `Run '${runId}' cannot be replayed with its tool's current definition: the tool no longer exists`
          : `Run '${runId}' cannot be replayed: it recorded nothing (it was not started with options.record, and its tool does not set record)`,
  'Replay a run started with {"options": {"record": true}} (or of a tool with "record": true); recordings are kept for KUBEGLUE_RESULT_RETENTION. For a deleted tool, replay with {"definition": "snapshot"} or give the tool in the body.',
);
/** `POST /v1/tools/{toolId}/tests` with a run that cannot be a test of that tool (contract/api/tool-test.ts). */
export const KG_ERR_RUN_NOT_A_TEST = define(
  'KG_ERR_RUN_NOT_A_TEST',
  409,
  (
    runId: string,
    why: 'running' | 'failed' | 'aborted' | 'truncated' | 'not-recorded' | 'removed' | 'other-tool',
  ) =>
    why === 'running'
      ? `Run '${runId}' is still running; it can be saved as a test once it succeeds`
      : why === 'failed' || why === 'aborted'
        ? `Run '${runId}' ${why === 'failed' ? 'failed' : 'was aborted'}: a test expects the output of a run that succeeded`
        : why === 'truncated'
          ? `The recording of run '${runId}' was cut at its size cap (KUBEGLUE_MAX_RECORDING_BYTES): it cannot answer every call of a test`
          : why === 'removed'
            ? `The recording of run '${runId}' is no longer kept (result retention removed it)`
            : why === 'other-tool'
              ? `Run '${runId}' is a run of another tool`
              : `Run '${runId}' recorded nothing (it was not started with options.record, and its tool does not set record)`,
  'Save as a test a run of this tool that succeeded with {"options": {"record": true}} (or of a tool with "record": true), and whose recording is complete; recordings are kept for KUBEGLUE_RESULT_RETENTION.',
);
/** The tool of the run to resume was deleted: a resumed run runs the tool's current definition. */
export const KG_ERR_RESUME_TOOL_GONE = define(
  'KG_ERR_RESUME_TOOL_GONE',
  409,
  (runId: string, toolId: string) =>
    `Run '${runId}' cannot be resumed: its tool '${toolId}' no longer exists or was never saved (a resumed run runs the tool's current saved definition)`,
  'Save the tool under that id (again: the steps before the failed one that are defined as they were are still reused), or run a definition with POST /v1/tools/run.',
);
/**
 * The key may not use the chain target. Answered before the target is looked up, so it is the same
 * whether that tool exists or not; the name is the caller's own input.
 */
export const KG_ERR_CHAIN_TARGET_FORBIDDEN = define(
  'KG_ERR_CHAIN_TARGET_FORBIDDEN',
  403,
  (toolId: string) =>
    `options.webhookUrl: this API key may not chain to tool '${toolId}'; it may chain only to the tools it is limited to`,
  'Chain only to tools the key is limited to, or start the run with a key that may use the target tool.',
);
export const KG_ERR_WEBHOOK_URL_CREDENTIALS = define(
  'KG_ERR_WEBHOOK_URL_CREDENTIALS',
  400,
  () =>
    'options.webhookUrl must not contain credentials (user:password@): they would be stored and returned with the run. ' +
    'Notifications are signed instead: verify the webhook-signature header with KUBEGLUE_NOTIFY_SECRET (Standard Webhooks)',
  'Remove user:password@ from options.webhookUrl and verify the webhook-signature header with KUBEGLUE_NOTIFY_SECRET instead.',
);
/** The run names a system that does not exist (anymore) in the run's mode. */
export const KG_ERR_RUN_SYSTEM_MISSING = define(
  'KG_ERR_RUN_SYSTEM_MISSING',
  400,
  (systemId: string) => `system '${systemId}' does not exist`,
  "Create the system in the run's mode (dev or prod), or change the tool's steps to a system that exists.",
);
/**
 * A System the run would use is Ready=False (its credentials Secret is missing, does not fit, …): the run
 * is refused, or a ToolRun's run fails, before any request is sent. Kubernetes only (the embedded
 * deployment has no System conditions).
 */
export const KG_ERR_RUN_SYSTEM_NOT_READY = define(
  'KG_ERR_RUN_SYSTEM_NOT_READY',
  409,
  (systemId: string, system: string, reason: string, detail: string) =>
    `System ${system} (system '${systemId}') is not ready: ${reason}${detail ? `: ${detail}` : ''}; the run sent no request`,
  'Fix the System the message names (kubectl describe system <name> shows its Ready condition): e.g. create the credentials Secret it references, or give that Secret the keys its authType needs. Runs start again once the System is Ready.',
);
/** Sync runs beyond KUBEGLUE_MAX_SYNC_RUNS are refused at once rather than held. */
export const KG_ERR_RUN_LIMIT = define(
  'KG_ERR_RUN_LIMIT',
  429,
  (limit: number) =>
    `Too many synchronous runs in progress (at most ${limit} at once); retry shortly, or start the run ` +
    'with options.async: true (asynchronous runs wait in a queue)',
  'Retry after Retry-After, or run with options.async: true (asynchronous runs wait in a queue). KUBEGLUE_MAX_SYNC_RUNS sets the limit.',
  { 'Retry-After': '1' },
);
/**
 * A run of a tool at its maxConcurrentRuns: refused at once (whenAtCapacity refuse), or a sync run that
 * waited its whole timeout in the tool's queue.
 */
export const KG_ERR_TOOL_AT_CAPACITY = define(
  'KG_ERR_TOOL_AT_CAPACITY',
  429,
  (toolId: string, limit: number, retryAfterSeconds: number, waitedMs: number) =>
    `Tool '${toolId}' is at its capacity: ${limit} of its runs execute at once (maxConcurrentRuns)` +
    (waitedMs > 0
      ? `; this synchronous run waited ${Math.round(waitedMs / 100) / 10} s (its timeout) without getting a slot`
      : `; retry in ${retryAfterSeconds} s`),
  "Retry after Retry-After, or start the run with options.async: true when the tool queues (whenAtCapacity: queue). The tool's maxConcurrentRuns sets the limit (docs/operations.md#concurrency-per-tool).",
  (_toolId: string, _limit: number, retryAfterSeconds: number) => ({
    'Retry-After': String(retryAfterSeconds),
  }),
);
/** The calling API key is over one of its quotas (runs per minute, concurrent runs). */
export const KG_ERR_KEY_QUOTA_EXCEEDED = define(
  'KG_ERR_KEY_QUOTA_EXCEEDED',
  429,
  (quota: 'runsPerMinute' | 'concurrentRuns', limit: number, resetSeconds: number) =>
    quota === 'runsPerMinute'
      ? `This API key may start ${limit} runs per minute (its quota runsPerMinute) and has; the next minute starts in ${resetSeconds} s`
      : `This API key may have ${limit} runs in progress at once (its quota concurrentRuns) and has; retry when one ends`,
  'Retry after Retry-After (RateLimit-Reset says the same); an admin raises the quota with PATCH /v1/api-keys/{keyId} (docs/operations.md#quotas-per-api-key).',
  (_quota: 'runsPerMinute' | 'concurrentRuns', limit: number, resetSeconds: number) => ({
    'Retry-After': String(resetSeconds),
    'RateLimit-Limit': String(limit),
    'RateLimit-Remaining': '0',
    'RateLimit-Reset': String(resetSeconds),
  }),
);
/** A field superglue's clients send for a feature kubeglue does not have, given a value that would matter. */
export const KG_ERR_UNSUPPORTED_FIELD = define(
  'KG_ERR_UNSUPPORTED_FIELD',
  400,
  (field: string, why: string) => `${field}: ${why} (send it empty or leave it out)`,
  'Leave the field out or send it empty; the message says what kubeglue takes instead (runtime credentials, inputs).',
);
export const KG_ERR_PAGE_TOO_DEEP = define(
  'KG_ERR_PAGE_TOO_DEEP',
  400,
  (page: number, limit: number, maxRows: number) =>
    `page ${page} with limit ${limit} reaches past the first ${maxRows} runs of the list; narrow it with ` +
    'filters (toolId, status, requestSources, userId, systemId), or page with the cursor: pass the ' +
    'nextCursor of the previous page as ?cursor=',
  "Narrow the list with filters, or page with the cursor: pass the previous page's nextCursor as ?cursor=.",
);
export const KG_ERR_CURSOR_INVALID = define(
  'KG_ERR_CURSOR_INVALID',
  400,
  () => 'cursor: not a cursor this API returned (use the nextCursor of the previous page as it is)',
  "Pass the previous page's nextCursor unchanged, or start again without a cursor.",
);

/** This area's codes in the order declared here (errors.ts puts the areas together into the catalog). */
export const RUN_ERRORS: readonly CatalogEntry[] = entries;
