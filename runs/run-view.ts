import type { FileArtifact, Run, RunOptions, RunWaiting } from '../contract/api/run.ts';
import type { Tool } from '../contract/api/tool.ts';
import type { RunStateRecord } from '../contract/api/tool-state.ts';
import type { JsonObject, JsonValue } from '../contract/json.ts';
import type { StoredFileArtifact, StoredRun } from '../store/index.ts';
import { withoutTraceOptions } from './execution/index.ts';

/** Payloads above this size are shown as a marker in list responses (the full payload stays stored). */
export const LIST_PAYLOAD_LIMIT_BYTES = 8 * 1024;

export type UrlForFile = (runId: string, fileKey: string) => string;

function artifacts(run: StoredRun, urlFor: UrlForFile | undefined): FileArtifact[] | undefined {
  const files: StoredFileArtifact[] | undefined = run.fileArtifacts;
  if (!files || files.length === 0) return undefined;
  return files.map((f) => ({
    fileKey: f.fileKey,
    filename: f.filename,
    contentType: f.contentType,
    size: f.size,
    ...(urlFor ? { downloadUrl: urlFor(run.runId, f.fileKey) } : {}),
  }));
}

function truncatedPayload(payload: JsonObject): JsonObject {
  const size = Buffer.byteLength(JSON.stringify(payload));
  return size <= LIST_PAYLOAD_LIMIT_BYTES ? payload : { __truncated__: true, size };
}

/**
 * The Run of the REST API. `list` views carry file metadata only and truncate large payloads;
 * single-run views get fresh download URLs.
 */
export function runView(
  run: StoredRun,
  view: { list?: boolean; urlFor?: UrlForFile; waiting?: RunWaiting | undefined } = {},
): Run {
  const files = artifacts(run, view.list ? undefined : view.urlFor);
  return {
    runId: run.runId,
    toolId: run.toolId,
    ...(run.tool ? { tool: run.tool as unknown as Tool } : {}),
    status: run.status,
    ...(run.toolPayload
      ? { toolPayload: view.list ? truncatedPayload(run.toolPayload) : run.toolPayload }
      : {}),
    ...(run.error !== undefined && run.status !== 'running' && run.status !== 'success'
      ? { error: run.error }
      : {}),
    ...(run.options ? { options: withoutTraceOptions(run.options) as RunOptions } : {}),
    requestSource: run.requestSource as Run['requestSource'],
    ...(run.traceId ? { traceId: run.traceId } : {}),
    ...(run.resultStorageUri ? { resultStorageUri: run.resultStorageUri } : {}),
    ...(run.userId ? { userId: run.userId } : {}),
    ...(run.executionMode ? { executionMode: run.executionMode } : {}),
    ...(run.parentRunId ? { parentRunId: run.parentRunId } : {}),
    ...(run.scheduleId ? { scheduleId: run.scheduleId } : {}),
    ...(run.resumedFrom ? { resumedFrom: run.resumedFrom } : {}),
    attempt: run.attempt ?? 1,
    ...(view.waiting && run.status === 'running' ? { waiting: view.waiting } : {}),
    metadata: {
      ...run.metadata,
      ...(run.warnings?.length ? { warnings: run.warnings } : {}),
      ...(run.state ? { state: stateView(run.state) } : {}),
    },
    ...(files ? { fileArtifacts: files } : {}),
    ...(run.recording ? { recording: run.recording } : {}),
  };
}

/** What a run record shows of its tool state: versions, and that a fixture was read (never its values). */
function stateView(state: NonNullable<StoredRun['state']>): RunStateRecord {
  return {
    ...(state.versionRead !== undefined ? { versionRead: state.versionRead } : {}),
    ...(state.versionWritten !== undefined ? { versionWritten: state.versionWritten } : {}),
    ...(state.fixture !== undefined ? { fixture: true as const } : {}),
  };
}

/**
 * A synchronous response adds what is not stored in the run record. `data` is left out where there is
 * none (a failed run, a failed step), as the interface types it (an optional object): superglue's clients
 * iterate it when present, and `null` crashed them instead of showing the run's error.
 */
export function withResult(run: Run, data: JsonValue, stepResults: Run['stepResults']): Run {
  return {
    ...run,
    ...(data === null || data === undefined ? {} : { data }),
    ...(stepResults ? { stepResults: stepResults.map(withoutNullData) } : {}),
  };
}

function withoutNullData<T extends { data?: unknown }>(step: T): T {
  if (step.data !== null) return step;
  const { data: _none, ...rest } = step;
  return rest as T;
}
