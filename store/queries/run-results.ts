import type { Recording } from '../../contract/api/recording.ts';
import type { JsonObject, JsonValue } from '../../contract/json.ts';
import type { Dialect } from '../dialect.ts';
import type { Db } from '../driver.ts';
import type { StoredFileArtifact, StoredRunFile, StoredRunResult, StoredStepResult } from '../types.ts';
import { camelRow, toBytes, toIso, toNumber } from './values.ts';

function upsertStepResults(d: Dialect): string {
  return `
  INSERT INTO run_step_results (run_id, seq, step_id, success, data, error)
  SELECT $1, r.seq, r.step_id, r.success, r.data, r.error
  FROM ${d.records('$2', 'r', 'seq integer, step_id text, success boolean, data jsonb, error text')}
  WHERE true
  ON CONFLICT (run_id, seq) DO UPDATE
    SET step_id = EXCLUDED.step_id, success = EXCLUDED.success, data = EXCLUDED.data, error = EXCLUDED.error`;
}

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

/** Stores one step's result while the run is still going, so a cancelled or crashed run keeps what it did. */
export async function saveStepResult(
  db: Db,
  runId: string,
  seq: number,
  result: StoredStepResult,
): Promise<void> {
  await db.query(upsertStepResults(db.dialect), [runId, stepRecords([result], seq)]);
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
  const { stored_at, ...result } = row;
  return { ...camelRow(result), storedAt: toIso(stored_at) };
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
  const { size, content, ...file } = row;
  return { ...camelRow(file), size: toNumber(size), content: toBytes(content) };
}

/** Metadata of every file a run produced (no content), by file key. */
export async function getRunFiles(db: Db, runId: string): Promise<StoredFileArtifact[]> {
  const { rows } = await db.query<{
    file_key: string;
    filename: string;
    content_type: string;
    size: number | string | bigint;
  }>('SELECT file_key, filename, content_type, size FROM run_files WHERE run_id = $1 ORDER BY file_key', [
    runId,
  ]);
  return rows.map((row) => ({
    fileKey: row.file_key,
    filename: row.filename,
    contentType: row.content_type,
    size: toNumber(row.size),
  }));
}

/** A run's recording as its finish stored it; undefined when it recorded nothing or retention removed it. */
export async function getRunRecording(db: Db, runId: string): Promise<Recording | undefined> {
  const { rows } = await db.query<{ recording: Recording }>(
    'SELECT recording FROM run_recordings WHERE run_id = $1',
    [runId],
  );
  return rows[0]?.recording;
}
