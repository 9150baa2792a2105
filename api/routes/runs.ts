import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  KG_ERR_FILE_NOT_FOUND,
  KG_ERR_PAGE_TOO_DEEP,
  KG_ERR_RUN_NOT_RECORDED,
} from '../../contract/api/errors.ts';
import { RUNS_OFFSET_MAX } from '../../contract/api/run.ts';
import type { JsonValue } from '../../contract/json.ts';
import { waitingRuns } from '../../runs/capacity.ts';
import { type FileUrlSigner, fileDownloadInfo, withDownloadUrls } from '../../runs/file-urls.ts';
import { runView } from '../../runs/run-view.ts';
import type { Caller, RunService, StartedRun } from '../../runs/service.ts';
import type { Store } from '../../store/index.ts';
import { principalOf } from '../auth.ts';
import { decodeRunCursor, encodeRunCursor } from '../run-cursor.ts';
import type { HandlersOf } from './register.ts';

const PREVIEW_ITEMS = 100;
const PREVIEW_STRING = 1000;

/** `?truncate=true`: arrays keep their first 100 items, strings their first 1 000 characters. */
function preview(value: JsonValue): JsonValue {
  if (typeof value === 'string')
    return value.length > PREVIEW_STRING ? `${value.slice(0, PREVIEW_STRING)}…` : value;
  if (Array.isArray(value)) return value.slice(0, PREVIEW_ITEMS).map(preview);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, preview(child)]));
  }
  return value;
}

/** Aborted when the client goes away before its answer was sent (for runs nobody else could see). */
export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

export interface RunRouteDeps {
  runs: RunService;
  store: Store;
  signer: FileUrlSigner;
}

/**
 * A started run's answer. X-Trace-Id is the run's trace id, so a caller's `options.traceId` (which wins over
 * the request header) is what both the header and the run say.
 */
function sendRun(reply: FastifyReply, started: StartedRun): FastifyReply {
  if (started.run.traceId) reply.header('X-Trace-Id', started.run.traceId);
  // The key's runsPerMinute quota as this run left it (docs/operations.md#quotas-per-api-key).
  if (started.rate) {
    reply.header('RateLimit-Limit', String(started.rate.limit));
    reply.header('RateLimit-Remaining', String(started.rate.remaining));
    reply.header('RateLimit-Reset', String(started.rate.resetSeconds));
  }
  return reply.status(started.statusCode).send(started.run);
}

type RunOperation =
  | 'runTool'
  | 'runToolDefinition'
  | 'runToolStep'
  | 'listRuns'
  | 'getRun'
  | 'cancelRun'
  | 'resumeRun'
  | 'replayRun'
  | 'testTool'
  | 'getRunResults'
  | 'getRunRecording'
  | 'listRunFiles'
  | 'getRunFileDownload';

export function runHandlers(deps: RunRouteDeps): HandlersOf<RunOperation> {
  const { runs, store, signer } = deps;
  const urlFor = (runId: string, fileKey: string) => signer.sign(runId, fileKey).url;
  const caller = (request: FastifyRequest): Caller => principalOf(request);

  return {
    runTool: async ({ params, body }, request, reply) => {
      const started = await runs.start({
        toolId: params.toolId,
        request: body,
        caller: caller(request),
        traceId: request.traceId,
        parentSpanId: request.parentSpanId,
      });
      return sendRun(reply, started);
    },

    // Only for keys not limited to tools (contract/api/routes.ts): a definition may carry any tool id. Its
    // systems are checked against the key's when it launches. `/v1/tools/run` and `/v1/tools/step/run` are
    // static routes: they win over /v1/tools/:toolId/run, and `run` and `step` cannot be tool ids.
    runToolDefinition: async ({ query, body }, request, reply) => {
      const started = await runs.startDraft({
        definition: body.tool,
        request: body,
        createRun: query.createRun,
        caller: caller(request),
        traceId: request.traceId,
        parentSpanId: request.parentSpanId,
        signal: clientGone(reply),
      });
      return sendRun(reply, started);
    },

    runToolStep: async ({ body }, request, reply) =>
      runs.runStep({
        request: body,
        caller: caller(request),
        traceId: request.traceId,
        parentSpanId: request.parentSpanId,
        signal: clientGone(reply),
      }),

    listRuns: async ({ query }, request) => {
      const { toolIds } = caller(request);
      const cursor = query.cursor === undefined ? undefined : decodeRunCursor(query.cursor);
      const pageNumber = cursor?.page ?? query.page ?? 1;
      // OFFSET reads and drops every row before the page: deep offsets cost the database a full scan.
      if (!cursor && pageNumber * query.limit > RUNS_OFFSET_MAX) {
        throw KG_ERR_PAGE_TOO_DEEP(pageNumber, query.limit, RUNS_OFFSET_MAX);
      }
      const page = await store.listRuns({
        ...(query.toolId ? { toolId: query.toolId } : {}),
        ...(query.status ? { status: query.status } : {}),
        ...(query.requestSources ? { requestSources: query.requestSources } : {}),
        ...(query.userId ? { userId: query.userId } : {}),
        ...(query.systemId ? { systemId: query.systemId } : {}),
        ...(query.startedAfter ? { startedAfter: query.startedAfter } : {}),
        ...(query.startedBefore ? { startedBefore: query.startedBefore } : {}),
        ...(toolIds !== null ? { toolIds } : {}),
        ...(cursor ? { after: { startedAt: cursor.startedAt, runId: cursor.runId } } : {}),
        page: pageNumber,
        limit: query.limit,
      });
      const last = page.runs.at(-1);
      const waiting = await waitingRuns(store, page.runs);
      return {
        data: page.runs.map((run) => runView(run, { list: true, waiting: waiting.get(run.runId) })),
        page: pageNumber,
        limit: query.limit,
        total: page.total,
        totalExact: page.totalExact,
        hasMore: page.hasMore,
        nextCursor: page.hasMore && last ? encodeRunCursor(last, pageNumber + 1) : null,
      };
    },

    getRun: async ({ params }, request) => {
      const run = await runs.get(params.runId, caller(request));
      const waiting = await waitingRuns(store, [run]);
      return runView(run, { urlFor, waiting: waiting.get(run.runId) });
    },

    cancelRun: async ({ params }, request) => runs.cancel(params.runId, caller(request)),

    resumeRun: async ({ params, body }, request, reply) => {
      const started = await runs.resume({
        runId: params.runId,
        request: body,
        caller: caller(request),
        traceId: request.traceId,
      });
      return sendRun(reply, started);
    },

    replayRun: async ({ params, body }, request) =>
      runs.replay({ runId: params.runId, request: body ?? {}, caller: caller(request) }),

    testTool: async ({ params }, request) => runs.test({ toolId: params.toolId, caller: caller(request) }),

    getRunResults: async ({ params: { runId }, query }, request) => {
      const run = await runs.get(runId, caller(request));
      if (run.status === 'running') {
        return {
          success: false,
          data: null,
          message: 'The run is still running; results are stored once it finishes',
        };
      }
      const result = await store.getRunResult(runId);
      if (!result) return { success: false, data: null, message: 'No results were stored for this run' };
      const truncated = query.truncate === 'true';
      return {
        success: true,
        data: {
          runId,
          success: result.success,
          data: truncated && result.data !== null ? preview(result.data) : result.data,
          stepResults: truncated
            ? result.stepResults.map((s) => (s.data === undefined ? s : { ...s, data: preview(s.data) }))
            : result.stepResults,
          toolPayload: result.toolPayload,
          error: result.error,
          storedAt: result.storedAt,
        },
        message: truncated ? 'Results (truncated preview)' : 'Results',
      };
    },

    getRunRecording: async ({ params: { runId } }, request) => {
      const run = await runs.get(runId, caller(request));
      if (run.status === 'running') throw KG_ERR_RUN_NOT_RECORDED(runId, 'running');
      const recording = await store.getRunRecording(runId);
      if (recording) return { runId, recording };
      // The run keeps its recording's summary when result retention removed the exchanges.
      throw KG_ERR_RUN_NOT_RECORDED(runId, run.recording ? 'removed' : 'not-recorded');
    },

    listRunFiles: async ({ params: { runId } }, request) => {
      const run = await runs.get(runId, caller(request));
      return { fileArtifacts: withDownloadUrls(signer, runId, run.fileArtifacts ?? []) };
    },

    getRunFileDownload: async ({ params: { runId, fileKey } }, request) => {
      const run = await runs.get(runId, caller(request));
      const file = run.fileArtifacts?.find((f) => f.fileKey === fileKey);
      if (!file) throw KG_ERR_FILE_NOT_FOUND(fileKey, runId);
      return fileDownloadInfo(signer, runId, file);
    },
  };
}
