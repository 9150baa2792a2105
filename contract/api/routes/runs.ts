/** The Runs routes: the list, the stats, one run, cancel, its results, its recording and its files. */
import { z } from 'zod';
import { RunList } from '../bodies.ts';
import { RecordingAnswer } from '../recording.ts';
import { ReplayAnswer, ReplayRunRequest } from '../replay.ts';
import { FileDownloadInfo, FileList, ListRunsQuery, ResumeRunRequest, Run, RunResults } from '../run.ts';
import { RunStats, RunStatsQuery } from '../run-stats.ts';
import { failure, notFound, runStarted, tooManySyncRuns } from './shared.ts';
import type { RouteSpec } from './spec.ts';

/** A run the key may not see (of a tool outside its toolIds) is answered as one that does not exist. */
const runNotFound = failure('No such run, or one of a tool this API key may not use');

/** The Runs operations. */
export const RUN_ROUTES = [
  {
    method: 'GET',
    path: '/runs',
    operationId: 'listRuns',
    summary: 'List runs',
    tag: 'Runs',
    scopes: ['runs:read'],
    query: ListRunsQuery,
    responses: {
      200: { description: 'Runs, newest first', schema: RunList },
      400: failure('Invalid query, a page past the first 10 000 runs, or a bad cursor'),
    },
  },
  {
    method: 'GET',
    // Not /runs/stats: "stats" is a valid run id, and a static route would hide that run's GET.
    path: '/stats/runs',
    operationId: 'getRunStats',
    summary: 'Runs of a time window by status and tool (p50/p95 durations), and the async runs waiting',
    tag: 'Runs',
    scopes: ['runs:read'],
    query: RunStatsQuery,
    responses: {
      200: {
        description: 'The window in buckets and per tool; a key limited to tools sees only those',
        schema: RunStats,
      },
      400: failure('Invalid query, or a window longer than 7 days or of more than 1 440 buckets'),
    },
  },
  {
    method: 'GET',
    path: '/runs/{runId}',
    operationId: 'getRun',
    summary: 'Run status and metadata',
    tag: 'Runs',
    scopes: ['runs:read'],
    responses: { 200: { description: 'The run, with fresh download URLs', schema: Run }, 404: notFound },
  },
  {
    method: 'POST',
    path: '/runs/{runId}/cancel',
    operationId: 'cancelRun',
    summary: 'Cancel a run',
    tag: 'Runs',
    scopes: ['runs:execute'],
    responses: {
      200: { description: 'Cancelled (or already aborted)', schema: Run },
      400: failure('The run already succeeded or failed'),
      404: notFound,
    },
  },
  {
    method: 'POST',
    path: '/runs/{runId}/resume',
    operationId: 'resumeRun',
    summary:
      "Resume a failed run: a new run of the tool's current definition from the failed step, reusing the unchanged steps before it",
    tag: 'Runs',
    scopes: ['runs:execute'],
    body: { schema: ResumeRunRequest, name: 'resume request', optional: true },
    responses: {
      ...runStarted('Asynchronous resumed run accepted'),
      404: runNotFound,
      409: failure(
        'The run succeeded or is running, its earlier step results are not stored in full, its tool no longer exists, or runId is reused',
      ),
      429: tooManySyncRuns,
    },
  },
  {
    method: 'POST',
    path: '/runs/{runId}/replay',
    operationId: 'replayRun',
    summary:
      'Replay a finished run against its recording only (no network, no credential), beside the original with their differences; nothing is stored',
    tag: 'Runs',
    // Running a tool, and reading the run (a key limited to other tools gets 404 as for GET /runs/{runId}).
    scopes: ['runs:execute'],
    body: { schema: ReplayRunRequest, name: 'replay request', optional: true },
    responses: {
      200: { description: 'The replay beside the original, with their differences', schema: ReplayAnswer },
      400: failure('Invalid request or definition, or an archived tool'),
      403: failure('The definition uses a system this API key may not use'),
      404: runNotFound,
      409: failure(
        'The run is running, recorded nothing, its recording is no longer kept, or its tool no longer exists (KG_ERR_RUN_NOT_REPLAYABLE)',
      ),
      429: tooManySyncRuns,
    },
  },
  {
    method: 'GET',
    path: '/runs/{runId}/results',
    operationId: 'getRunResults',
    summary: 'Full run results',
    tag: 'Runs',
    scopes: ['runs:read'],
    query: z.strictObject({ truncate: z.enum(['true', 'false']).optional(), token: z.string().optional() }),
    responses: { 200: { description: 'Stored results', schema: RunResults }, 404: notFound },
  },
  {
    method: 'GET',
    path: '/runs/{runId}/recording',
    operationId: 'getRunRecording',
    summary: "A run's recorded exchanges (options.record)",
    tag: 'Runs',
    scopes: ['runs:read'],
    responses: {
      200: { description: 'The recording, redacted', schema: RecordingAnswer },
      404: failure('No such run, or it recorded nothing (KG_ERR_RUN_NOT_RECORDED)'),
    },
  },
  {
    method: 'GET',
    path: '/runs/{runId}/files',
    operationId: 'listRunFiles',
    summary: 'List file artifacts',
    tag: 'Runs',
    scopes: ['runs:read'],
    responses: { 200: { description: 'Files with fresh presigned URLs', schema: FileList }, 404: notFound },
  },
  {
    method: 'GET',
    path: '/runs/{runId}/files/{fileKey}/download',
    operationId: 'getRunFileDownload',
    summary: 'Fresh download URL for one file',
    tag: 'Runs',
    scopes: ['runs:read'],
    responses: { 200: { description: 'Download info', schema: FileDownloadInfo }, 404: notFound },
  },
] as const satisfies readonly RouteSpec[];
