import { recordingSummary } from '../../contract/api/recording.ts';
import type { Dialect } from '../dialect.ts';
import type { Db } from '../driver.ts';
import type {
  FinishRun,
  InsertRunOptions,
  InsertRunResult,
  RunFileInput,
  StoredRun,
  StoredStepResult,
} from '../types.ts';
import { OUTBOX_CHANNEL, outboxInsertCtes, outboxInsertSql, outboxRecords } from './outbox.ts';
import { credentialRecord, credentialsInsertSql } from './run-credentials.ts';
import {
  insertRunsFromJson,
  RUN_COLUMNS,
  RUN_INSERT_COLUMNS,
  type RunRow,
  runFromRow,
  runRecord,
  runSystemsInsertSql,
} from './runs.ts';

/**
 * The two writes every run makes (insert while running, terminal write), for any number of runs at once: a
 * single run costs the same statements as a batch of hundreds, which is what group commit builds on. Each
 * function is atomic on its own (one statement, plus a read), so it needs no transaction unless the caller
 * combines several writes.
 */

export interface InsertRunCall extends InsertRunOptions {
  run: StoredRun;
}

export interface FinishRunCall {
  runId: string;
  finish: FinishRun;
}

/** How often the insert is retried for a run id whose row vanished between the insert and the read (retention). */
const INSERT_ATTEMPTS = 3;

/**
 * Inserts runs that do not exist yet; results in the order of calls. Calls are applied as if one after the
 * other: of several calls with one run id the first may insert and the later ones see its row. A call whose
 * run id exists gets 'existing' when tool and input hash match (a retry) and 'conflict' otherwise. Outbox rows
 * of a call are written only when that call inserted, in the same statement, and so are its sealed runtime
 * credentials: a request that lost the race for a run id never stores credentials under it.
 */
export async function insertRunCalls(db: Db, calls: readonly InsertRunCall[]): Promise<InsertRunResult[]> {
  const d = db.dialect;
  const results: (InsertRunResult | undefined)[] = new Array(calls.length);
  let pending = calls.map((_, index) => index);
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt === INSERT_ATTEMPTS) {
      throw new Error(
        `run ${calls[pending[0]!]!.run.runId} kept appearing and disappearing while being inserted`,
      );
    }
    const firstCallOf = new Map<string, number>();
    for (const index of pending) {
      const runId = calls[index]!.run.runId;
      if (!firstCallOf.has(runId)) firstCallOf.set(runId, index);
    }
    // In run id order, so concurrent batches lock conflicting ids in the same order and cannot deadlock.
    const firstCalls = inRunIdOrder(firstCallOf).map((index) => calls[index]!);
    const inserted = d.dataModifyingCtes
      ? await insertWithEffectsAsCtes(db, firstCalls)
      : await insertRunByRun(db, firstCalls);
    for (const row of inserted) {
      results[firstCallOf.get(row.run_id)!] = { status: 'inserted', run: runFromRow(row) };
    }
    const unresolved = pending.filter((index) => results[index] === undefined);
    if (unresolved.length === 0) break;
    // Run ids that already existed, and later calls for ids the first call just inserted: judge them by the row.
    const existing = await db.query<RunRow & { input_hash: string | null }>(
      `SELECT ${RUN_COLUMNS}, input_hash FROM runs WHERE ${d.inArray('run_id', '$1')}`,
      [[...new Set(unresolved.map((index) => calls[index]!.run.runId))]],
    );
    const rowOf = new Map(existing.rows.map((row) => [row.run_id, row]));
    pending = [];
    for (const index of unresolved) {
      const call = calls[index]!;
      const found = rowOf.get(call.run.runId);
      if (!found) {
        pending.push(index);
        continue;
      }
      const sameRequest = found.tool_id === call.run.toolId && found.input_hash === (call.inputHash ?? null);
      results[index] = sameRequest ? { status: 'existing', run: runFromRow(found) } : { status: 'conflict' };
    }
  }
  return results.map((result) => result!);
}

/** The values of runRecord in RUN_INSERT_COLUMNS order, for a bound-parameter insert. */
const RUN_INSERT_PLACEHOLDERS = RUN_INSERT_COLUMNS.split(',').map((_, index) => `$${index + 1}`);

/**
 * SQLite: one bound-parameter insert per run (and its outbox rows and credentials when it inserted), in one
 * transaction; not the JSON record list Postgres gets, which SQLite would parse once per column.
 */
async function insertRunByRun(db: Db, calls: readonly InsertRunCall[]): Promise<RunRow[]> {
  const d = db.dialect;
  const columns = RUN_INSERT_COLUMNS.split(',').map((column) => column.trim());
  const placeholders = RUN_INSERT_PLACEHOLDERS.map((placeholder, index) =>
    columns[index] === 'started_at' || columns[index] === 'completed_at'
      ? d.timestamp(placeholder)
      : placeholder,
  );
  const sql = `INSERT INTO runs (${RUN_INSERT_COLUMNS}) VALUES (${placeholders.join(', ')})
    ON CONFLICT (run_id) DO NOTHING RETURNING ${RUN_COLUMNS}`;
  const insertAll = async (tx: Db): Promise<RunRow[]> => {
    const inserted: RunRow[] = [];
    for (const call of calls) {
      const record = runRecord(call.run, call.inputHash);
      const { rows } = await tx.query<RunRow>(
        sql,
        columns.map((column) => record[column]),
      );
      const row = rows[0];
      if (!row) continue;
      inserted.push(row);
      if (call.run.systemIds.length > 0) {
        await tx.query(runSystemsInsertSql(d, 'runs r', 'r.run_id = $1'), [row.run_id]);
      }
      const owner = JSON.stringify([{ run_id: row.run_id }]);
      const ownerSource = d.records('$1', 'owner', 'run_id text');
      if (call.outbox?.length) {
        await writeEffects(tx, [owner, JSON.stringify(outboxRecords(call.outbox, row.run_id))], ownerSource);
      }
      if (call.sealedCredentials) {
        await tx.query(credentialsInsertSql(d, '$2', ownerSource), [
          owner,
          JSON.stringify([credentialRecord(d, row.run_id, call.sealedCredentials)]),
        ]);
      }
    }
    return inserted;
  };
  // A lone run without systems or effects is one statement: atomic without a transaction of its own.
  const lone = calls.length === 1 ? calls[0]! : undefined;
  const alone =
    lone !== undefined && lone.run.systemIds.length === 0 && !lone.outbox?.length && !lone.sealedCredentials;
  return alone ? insertAll(db) : db.transaction(insertAll);
}

/**
 * Postgres: the insert, its run_systems rows, its outbox rows and its credentials as one statement; only the
 * runs it inserted get them. Each part only when there are such rows: planning them costs time on every call.
 */
async function insertWithEffectsAsCtes(db: Db, calls: readonly InsertRunCall[]): Promise<RunRow[]> {
  const d = db.dialect;
  const runs: object[] = [];
  const effects: object[] = [];
  const credentials: object[] = [];
  for (const call of calls) {
    runs.push(runRecord(call.run, call.inputHash));
    if (call.outbox?.length) effects.push(...outboxRecords(call.outbox, call.run.runId, effects.length));
    if (call.sealedCredentials) credentials.push(credentialRecord(d, call.run.runId, call.sealedCredentials));
  }
  const insertSql = `${insertRunsFromJson(d)} ON CONFLICT (run_id) DO NOTHING RETURNING ${RUN_COLUMNS}`;
  const params: unknown[] = [JSON.stringify(runs)];
  const withSystems = calls.some((call) => call.run.systemIds.length > 0)
    ? `, run_systems_written AS (${runSystemsInsertSql(d, 'inserted r')})`
    : '';
  const withEffects =
    effects.length > 0 ? `, ${outboxInsertCtes(d, param(params, effects), 'inserted AS owner')}` : '';
  const withCredentials =
    credentials.length > 0
      ? `, run_credentials_written AS (${credentialsInsertSql(d, param(params, credentials), 'inserted AS owner')})`
      : '';
  const { rows } = await db.query<RunRow>(
    `WITH inserted AS (${insertSql})${withSystems}${withEffects}${withCredentials}
     SELECT inserted.* FROM inserted ${withEffects ? 'LEFT JOIN wake ON true' : ''}`,
    params,
  );
  return rows;
}

/** Writes outbox records ($2) owned by `owners` (a row source over $1) and wakes the delivery loops at commit. */
async function writeEffects(tx: Db, params: readonly unknown[], owners: string): Promise<void> {
  const { rows } = await tx.query(outboxInsertSql(tx.dialect, '$2', owners), params);
  if (rows.length > 0) await tx.notify(OUTBOX_CHANNEL, '');
}

const FINISH_RECORD_TYPES = `run_id text, status text, error text, completed_at timestamptz, duration_ms bigint,
  file_artifacts jsonb, result_storage_uri text, has_result boolean, result_success boolean, result_data jsonb,
  result_error text, step_results jsonb, recording jsonb, recording_entries jsonb`;

const STEP_RECORD_TYPES = 'run_id text, seq integer, step_id text, success boolean, data jsonb, error text';

const FILE_RECORD_TYPES =
  'run_id text, file_key text, filename text, content_type text, size bigint, content text';

/** Appends a JSON parameter and answers its placeholder. */
function param(params: unknown[], records: readonly object[]): string {
  params.push(JSON.stringify(records));
  return `$${params.length}`;
}

interface FinishRecords {
  finishes: object[];
  steps: object[];
  files: object[];
  effects: object[];
  runIds: string[];
  /** Whether any finish carries a result. */
  withResults: boolean;
  /** Whether any finish carries a recording. */
  withRecordings: boolean;
}

/** The finish records of $1 as the row source `finish`; the statements below read them from there. */
function finishCte(d: Dialect): string {
  return `finish AS (SELECT * FROM ${d.records('$1', 'f', FINISH_RECORD_TYPES)})`;
}

/**
 * The terminal update of the runs in `finish` that are still running, returning those it won. The id list
 * ($2) lets Postgres's planner look the rows up by primary key: its row estimate for jsonb_to_recordset is a
 * fixed 100, which can make it scan every running run instead.
 */
function wonUpdateSql(d: Dialect): string {
  return `UPDATE runs
       SET status = f.status, error = f.error, completed_at = f.completed_at, duration_ms = f.duration_ms,
           file_artifacts = COALESCE(f.file_artifacts, runs.file_artifacts),
           result_storage_uri = COALESCE(f.result_storage_uri, runs.result_storage_uri),
           recording = f.recording
      FROM finish f
     WHERE runs.run_id = f.run_id AND runs.status = 'running' AND ${d.inArray('runs.run_id', '$2')}
     RETURNING runs.run_id`;
}

/** The parts written only for the runs in `won` (a row source with a run_id column). */
function stepsSql(d: Dialect, recordsParam: string, won: string): string {
  return `INSERT INTO run_step_results (run_id, seq, step_id, success, data, error)
      SELECT s.run_id, s.seq, s.step_id, s.success, s.data, s.error
        FROM ${d.records(recordsParam, 's', STEP_RECORD_TYPES)}
        JOIN ${won} ON won.run_id = s.run_id
       WHERE true
      ON CONFLICT (run_id, seq) DO UPDATE
        SET step_id = EXCLUDED.step_id, success = EXCLUDED.success, data = EXCLUDED.data, error = EXCLUDED.error`;
}

/** Reads `finish`. */
function resultsSql(d: Dialect, won: string): string {
  return `INSERT INTO run_results (run_id, success, data, step_results, tool_payload, error)
      SELECT f.run_id, f.result_success, COALESCE(f.result_data, ${d.typed("'null'", 'jsonb')}), f.step_results,
             r.tool_payload, f.result_error
        FROM finish f
        JOIN ${won} ON won.run_id = f.run_id
        JOIN runs r ON r.run_id = f.run_id
       WHERE f.has_result
      ON CONFLICT (run_id) DO UPDATE
        SET success = EXCLUDED.success, data = EXCLUDED.data, step_results = EXCLUDED.step_results,
            tool_payload = EXCLUDED.tool_payload, error = EXCLUDED.error, stored_at = ${d.now}`;
}

/** Reads `finish`: the recordings of the runs in `won` that have one. */
function recordingsSql(won: string): string {
  return `INSERT INTO run_recordings (run_id, recording)
      SELECT f.run_id, f.recording_entries
        FROM finish f
        JOIN ${won} ON won.run_id = f.run_id
       WHERE f.recording_entries IS NOT NULL
      ON CONFLICT (run_id) DO UPDATE SET recording = EXCLUDED.recording`;
}

function filesSql(d: Dialect, recordsParam: string, won: string): string {
  return `INSERT INTO run_files (run_id, file_key, filename, content_type, size, content)
      SELECT x.run_id, x.file_key, x.filename, x.content_type, x.size, ${d.bytesFromText('x.content')}
        FROM ${d.records(recordsParam, 'x', FILE_RECORD_TYPES)}
        JOIN ${won} ON won.run_id = x.run_id
       WHERE true
      ON CONFLICT (run_id, file_key) DO UPDATE
        SET filename = EXCLUDED.filename, content_type = EXCLUDED.content_type, size = EXCLUDED.size,
            content = EXCLUDED.content`;
}

/**
 * Postgres: the terminal update and everything that comes with it as one statement, so only the runs whose
 * update wins (still running) get their step results, result, files and outbox rows written. Parts without
 * rows are left out, since planning them costs time on every call.
 */
async function finishAsCtes(db: Db, records: FinishRecords): Promise<string[]> {
  const d = db.dialect;
  const params: unknown[] = [JSON.stringify(records.finishes), records.runIds];
  const parts = [finishCte(d), `won AS (${wonUpdateSql(d)})`];
  if (records.steps.length > 0) parts.push(`steps AS (${stepsSql(d, param(params, records.steps), 'won')})`);
  if (records.withResults) parts.push(`results AS (${resultsSql(d, 'won')})`);
  if (records.files.length > 0) parts.push(`files AS (${filesSql(d, param(params, records.files), 'won')})`);
  if (records.withRecordings) parts.push(`recordings AS (${recordingsSql('won')})`);
  const effects = records.effects.length > 0;
  if (effects) parts.push(outboxInsertCtes(d, param(params, records.effects), 'won AS owner'));
  const { rows } = await db.query<{ run_id: string }>(
    `WITH ${parts.join(', ')} SELECT won.run_id FROM won ${effects ? 'LEFT JOIN wake ON true' : ''}`,
    params,
  );
  return rows.map((row) => row.run_id);
}

/**
 * SQLite: the same parts run by run in one transaction, each a prepared statement with bound values (a
 * few microseconds each). Not the JSON record lists of Postgres: SQLite would parse every record's JSON
 * (step data and result included) once per column it extracts, which cost ~40 times more per run.
 */
async function finishRunByRun(db: Db, calls: readonly FinishRunCall[], order: number[]): Promise<string[]> {
  const d = db.dialect;
  return db.transaction(async (tx) => {
    const won: string[] = [];
    for (const index of order) {
      const { runId, finish } = calls[index]!;
      const runFiles = lastPerFileKey(finish.files ?? []);
      const { rowCount } = await tx.query(
        `UPDATE runs
            SET status = $2, error = $3, completed_at = ${d.timestamp('$4')}, duration_ms = $5,
                file_artifacts = COALESCE($6, file_artifacts), result_storage_uri = COALESCE($7, result_storage_uri),
                recording = $8
          WHERE run_id = $1 AND status = 'running'`,
        [
          runId,
          finish.status,
          finish.error ?? null,
          finish.completedAt,
          finish.durationMs,
          runFiles.length > 0 ? JSON.stringify(fileArtifacts(runFiles)) : null,
          finish.resultStorageUri ?? null,
          finish.recording ? JSON.stringify(recordingSummary(finish.recording)) : null,
        ],
      );
      if (rowCount === 0) continue;
      won.push(runId);
      for (const [seq, step] of (finish.stepResults ?? []).entries()) {
        await tx.query(
          `INSERT INTO run_step_results (run_id, seq, step_id, success, data, error)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (run_id, seq) DO UPDATE
             SET step_id = EXCLUDED.step_id, success = EXCLUDED.success, data = EXCLUDED.data, error = EXCLUDED.error`,
          [runId, seq, step.stepId, step.success, jsonOrNull(step.data), step.error ?? null],
        );
      }
      if (finish.result !== undefined) {
        await tx.query(
          `INSERT INTO run_results (run_id, success, data, step_results, tool_payload, error)
           SELECT $1, $2, $3, $4, r.tool_payload, $5 FROM runs r WHERE r.run_id = $1
           ON CONFLICT (run_id) DO UPDATE
             SET success = EXCLUDED.success, data = EXCLUDED.data, step_results = EXCLUDED.step_results,
                 tool_payload = EXCLUDED.tool_payload, error = EXCLUDED.error, stored_at = ${d.now}`,
          [
            runId,
            finish.result.success,
            // As the record path stores it: a missing result is JSON null, never SQL NULL.
            JSON.stringify(finish.result.data ?? null),
            JSON.stringify(finish.stepResults ?? []),
            finish.result.error ?? null,
          ],
        );
      }
      if (finish.recording) {
        await tx.query(
          `INSERT INTO run_recordings (run_id, recording) VALUES ($1, $2)
           ON CONFLICT (run_id) DO UPDATE SET recording = EXCLUDED.recording`,
          [runId, JSON.stringify(finish.recording)],
        );
      }
      for (const file of runFiles) {
        await tx.query(
          `INSERT INTO run_files (run_id, file_key, filename, content_type, size, content)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (run_id, file_key) DO UPDATE
             SET filename = EXCLUDED.filename, content_type = EXCLUDED.content_type, size = EXCLUDED.size,
                 content = EXCLUDED.content`,
          [runId, file.fileKey, file.filename, file.contentType, file.content.byteLength, file.content],
        );
      }
      if (finish.outbox?.length) {
        await writeEffects(
          tx,
          [JSON.stringify([{ run_id: runId }]), JSON.stringify(outboxRecords(finish.outbox, runId))],
          d.records('$1', 'owner', 'run_id text'),
        );
      }
    }
    return won;
  });
}

/** A JSON value as a jsonb column holds it; JSON null (and undefined) is SQL NULL, as the record path does. */
function jsonOrNull(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

function fileArtifacts(files: readonly RunFileInput[]): object[] {
  return files.map((file) => ({
    fileKey: file.fileKey,
    filename: file.filename,
    contentType: file.contentType,
    size: file.content.byteLength,
  }));
}

/**
 * Writes the terminal state of running runs; results (won or not) in the order of calls. Only the first
 * terminal write of a run wins: a call for a run that is not running (or a later call for a run id already
 * finished by an earlier call) gets false and writes nothing, not even its outbox rows.
 */
export async function finishRunCalls(db: Db, calls: readonly FinishRunCall[]): Promise<boolean[]> {
  const d = db.dialect;
  const firstCallOf = new Map<string, number>();
  calls.forEach((call, index) => {
    if (!firstCallOf.has(call.runId)) firstCallOf.set(call.runId, index);
  });
  const order = inRunIdOrder(firstCallOf);
  const won = new Set(
    d.dataModifyingCtes
      ? await finishAsCtes(db, finishRecords(d, calls, order))
      : await finishRunByRun(db, calls, order),
  );
  return calls.map((call, index) => firstCallOf.get(call.runId) === index && won.has(call.runId));
}

/** The JSON record lists of a batch's terminal writes (Postgres), in `order`. */
function finishRecords(d: Dialect, calls: readonly FinishRunCall[], order: number[]): FinishRecords {
  const finishes: object[] = [];
  const steps: object[] = [];
  const files: object[] = [];
  const effects: object[] = [];
  for (const index of order) {
    const { runId, finish } = calls[index]!;
    const runFiles = lastPerFileKey(finish.files ?? []);
    finishes.push({
      run_id: runId,
      status: finish.status,
      error: finish.error ?? null,
      completed_at: finish.completedAt,
      duration_ms: finish.durationMs,
      file_artifacts: runFiles.length > 0 ? fileArtifacts(runFiles) : null,
      result_storage_uri: finish.resultStorageUri ?? null,
      has_result: finish.result !== undefined,
      result_success: finish.result?.success ?? null,
      result_data: finish.result?.data ?? null,
      result_error: finish.result?.error ?? null,
      step_results: finish.stepResults ?? [],
      recording: finish.recording ? recordingSummary(finish.recording) : null,
      recording_entries: finish.recording ?? null,
    });
    steps.push(...stepRecords(runId, finish.stepResults ?? []));
    for (const file of runFiles) {
      files.push({
        run_id: runId,
        file_key: file.fileKey,
        filename: file.filename,
        content_type: file.contentType,
        size: file.content.byteLength,
        content: d.bytesToText(file.content),
      });
    }
    if (finish.outbox?.length) effects.push(...outboxRecords(finish.outbox, runId, effects.length));
  }
  return {
    finishes,
    steps,
    files,
    effects,
    runIds: order.map((index) => calls[index]!.runId),
    withResults: calls.some((call) => call.finish.result !== undefined),
    withRecordings: calls.some((call) => call.finish.recording !== undefined),
  };
}

function inRunIdOrder(firstCallOf: Map<string, number>): number[] {
  return [...firstCallOf.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, index]) => index);
}

function stepRecords(runId: string, results: readonly StoredStepResult[]): object[] {
  return results.map((result, seq) => ({
    run_id: runId,
    seq,
    step_id: result.stepId,
    success: result.success,
    data: result.data ?? null,
    error: result.error ?? null,
  }));
}

/** One row per file key (the last one wins, as writing them one after the other would do). */
function lastPerFileKey(files: readonly RunFileInput[]): RunFileInput[] {
  return [...new Map(files.map((file) => [file.fileKey, file])).values()];
}

export async function insertRun(
  db: Db,
  run: StoredRun,
  opts: InsertRunOptions = {},
): Promise<InsertRunResult> {
  const [result] = await insertRunCalls(db, [{ ...opts, run }]);
  return result!;
}

export async function finishRun(db: Db, runId: string, finish: FinishRun): Promise<boolean> {
  const [won] = await finishRunCalls(db, [{ runId, finish }]);
  return won!;
}
