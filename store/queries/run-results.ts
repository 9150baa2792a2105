import type { JsonObject, JsonValue } from '../../crds/json.ts';
import type { Db } from '../driver.ts';
import type { FinishRun, StoredRunFile, StoredRunResult, StoredStepResult } from '../types.ts';
import { toBytes, toIso, toNumber } from './values.ts';

const UPSERT_STEP_RESULTS = `
  INSERT INTO run_step_results (run_id, seq, step_id, success, data, error)
  SELECT $1, r.seq, r.step_id, r.success, r.data, r.error
  FROM jsonb_to_recordset($2::jsonb) AS r(seq integer, step_id text, success boolean, data jsonb, error text)
  ON CONFLICT (run_id, seq) DO UPDATE
    SET step_id = EXCLUDED.step_id, success = EXCLUDED.success, data = EXCLUDED.data, error = EXCLUDED.error`;

function stepRecords(results: readonly StoredStepResult[], firstSeq: number): string {
  return JSON.stringify(
    results.map((result, index) => ({
      seq: firstSeq + index,
      step_id: result.stepId,
      success: result.success,
      data: result.data ?? null,
      error: result.error ?? null,
    })),
  );
}

/**
 * Writes the terminal state of a running run, and with it (same transaction) its step results, result and
 * files. Only the first terminal write wins: returns false, writing nothing, when the run is not running.
 */
export async function finishRun(db: Db, runId: string, finish: FinishRun): Promise<boolean> {
  return db.transaction(async (tx) => {
    const files = finish.files ?? [];
    const artifacts = files.map((file) => ({
      fileKey: file.fileKey,
      filename: file.filename,
      contentType: file.contentType,
      size: file.content.byteLength,
    }));
    const updated = await tx.query<{ tool_payload: JsonObject | null }>(
      `UPDATE runs
         SET status = $2, error = $3, completed_at = $4, duration_ms = $5,
             file_artifacts = COALESCE($6::jsonb, file_artifacts),
             result_storage_uri = COALESCE($7, result_storage_uri)
       WHERE run_id = $1 AND status = 'running'
       RETURNING tool_payload`,
      [
        runId,
        finish.status,
        finish.error ?? null,
        finish.completedAt,
        finish.durationMs,
        artifacts.length > 0 ? JSON.stringify(artifacts) : null,
        finish.resultStorageUri ?? null,
      ],
    );
    const run = updated.rows[0];
    if (!run) return false;
    if (finish.stepResults && finish.stepResults.length > 0) {
      await tx.query(UPSERT_STEP_RESULTS, [runId, stepRecords(finish.stepResults, 0)]);
    }
    if (finish.result) {
      await tx.query(
        `INSERT INTO run_results (run_id, success, data, step_results, tool_payload, error)
         VALUES ($1, $2, $3::jsonb, $4::jsonb, $5::jsonb, $6)
         ON CONFLICT (run_id) DO UPDATE
           SET success = EXCLUDED.success, data = EXCLUDED.data, step_results = EXCLUDED.step_results,
               tool_payload = EXCLUDED.tool_payload, error = EXCLUDED.error, stored_at = now()`,
        [
          runId,
          finish.result.success,
          JSON.stringify(finish.result.data ?? null),
          JSON.stringify(finish.stepResults ?? []),
          run.tool_payload === null ? null : JSON.stringify(run.tool_payload),
          finish.result.error ?? null,
        ],
      );
    }
    for (const file of files) {
      await tx.query(
        `INSERT INTO run_files (run_id, file_key, filename, content_type, size, content)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (run_id, file_key) DO UPDATE
           SET filename = EXCLUDED.filename, content_type = EXCLUDED.content_type, size = EXCLUDED.size,
               content = EXCLUDED.content`,
        [runId, file.fileKey, file.filename, file.contentType, file.content.byteLength, file.content],
      );
    }
    return true;
  });
}

/** Stores one step's result while the run is still going, so a cancelled or crashed run keeps what it did. */
export async function saveStepResult(
  db: Db,
  runId: string,
  seq: number,
  result: StoredStepResult,
): Promise<void> {
  await db.query(UPSERT_STEP_RESULTS, [runId, stepRecords([result], seq)]);
}

export async function getStepResults(db: Db, runId: string): Promise<StoredStepResult[]> {
  const { rows } = await db.query<{
    step_id: string;
    success: boolean;
    data: JsonValue | null;
    error: string | null;
  }>('SELECT step_id, success, data, error FROM run_step_results WHERE run_id = $1 ORDER BY seq', [runId]);
  return rows.map((row) => {
    const result: StoredStepResult = { stepId: row.step_id, success: row.success };
    if (row.data !== null) result.data = row.data;
    if (row.error !== null) result.error = row.error;
    return result;
  });
}

export async function getRunResult(db: Db, runId: string): Promise<StoredRunResult | undefined> {
  const { rows } = await db.query<{
    run_id: string;
    success: boolean;
    data: JsonValue | null;
    step_results: StoredStepResult[];
    tool_payload: JsonObject | null;
    error: string | null;
    stored_at: Date | string;
  }>(
    'SELECT run_id, success, data, step_results, tool_payload, error, stored_at FROM run_results WHERE run_id = $1',
    [runId],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    runId: row.run_id,
    success: row.success,
    data: row.data,
    stepResults: row.step_results,
    toolPayload: row.tool_payload,
    error: row.error,
    storedAt: toIso(row.stored_at),
  };
}

export async function getRunFile(db: Db, runId: string, fileKey: string): Promise<StoredRunFile | undefined> {
  const { rows } = await db.query<{
    file_key: string;
    filename: string;
    content_type: string;
    size: number | string | bigint;
    content: Uint8Array;
  }>(
    'SELECT file_key, filename, content_type, size, content FROM run_files WHERE run_id = $1 AND file_key = $2',
    [runId, fileKey],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    fileKey: row.file_key,
    filename: row.filename,
    contentType: row.content_type,
    size: toNumber(row.size),
    content: toBytes(row.content),
  };
}
