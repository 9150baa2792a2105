import type { JsonObject } from '../../contract/json.ts';
import { type Dialect, PG_DIALECT } from '../dialect.ts';
import type { Db } from '../driver.ts';
import type {
  ExecutionMode,
  ListRunsFilter,
  RunPage,
  RunStatus,
  StoredFileArtifact,
  StoredRun,
  StoredRunState,
} from '../types.ts';
import { optional, toIso, toNumber } from './values.ts';

/** Column list of every query that returns runs, in the shape RunRow describes. */
export const RUN_COLUMNS = `run_id, tool_id, status, request_source, user_id, system_ids, execution_mode, trace_id,
  parent_run_id, started_at, completed_at, duration_ms, error, tool, tool_payload, options, file_artifacts,
  result_storage_uri, executor, allowed_tool_ids, allowed_system_ids, attempt, state, warnings, schedule_id`;

export interface RunRow {
  run_id: string;
  tool_id: string;
  status: RunStatus;
  request_source: string;
  user_id: string | null;
  system_ids: string[];
  execution_mode: ExecutionMode | null;
  trace_id: string | null;
  parent_run_id: string | null;
  started_at: Date | string;
  completed_at: Date | string | null;
  duration_ms: number | string | bigint | null;
  error: string | null;
  tool: JsonObject | null;
  tool_payload: JsonObject | null;
  options: JsonObject | null;
  file_artifacts: StoredFileArtifact[] | null;
  result_storage_uri: string | null;
  executor: string | null;
  allowed_tool_ids: string[] | null;
  allowed_system_ids: string[] | null;
  attempt: number | string | bigint;
  state: StoredRunState | null;
  warnings: string[] | null;
  schedule_id: string | null;
}

export function runFromRow(row: RunRow): StoredRun {
  const run: StoredRun = {
    runId: row.run_id,
    toolId: row.tool_id,
    status: row.status,
    requestSource: row.request_source,
    systemIds: row.system_ids,
    metadata: { startedAt: toIso(row.started_at) },
  };
  // Absent means the first attempt, as in what callers insert.
  const attempt = toNumber(row.attempt);
  if (attempt !== 1) run.attempt = attempt;
  if (row.completed_at !== null) run.metadata.completedAt = toIso(row.completed_at);
  if (row.duration_ms !== null) run.metadata.durationMs = toNumber(row.duration_ms);
  optional(run, 'userId', row.user_id);
  optional(run, 'executionMode', row.execution_mode);
  optional(run, 'traceId', row.trace_id);
  optional(run, 'parentRunId', row.parent_run_id);
  optional(run, 'error', row.error);
  optional(run, 'tool', row.tool);
  optional(run, 'toolPayload', row.tool_payload);
  optional(run, 'options', row.options);
  optional(run, 'fileArtifacts', row.file_artifacts);
  optional(run, 'resultStorageUri', row.result_storage_uri);
  optional(run, 'executor', row.executor);
  optional(run, 'allowedToolIds', row.allowed_tool_ids);
  optional(run, 'allowedSystemIds', row.allowed_system_ids);
  optional(run, 'state', row.state);
  optional(run, 'warnings', row.warnings);
  optional(run, 'scheduleId', row.schedule_id);
  return run;
}

/** The JSON record dialect.records turns into a row; keys are the column names. */
export function runRecord(run: StoredRun, inputHash: string | undefined): Record<string, unknown> {
  return {
    run_id: run.runId,
    tool_id: run.toolId,
    status: run.status,
    request_source: run.requestSource,
    user_id: run.userId ?? null,
    system_ids: run.systemIds,
    execution_mode: run.executionMode ?? null,
    trace_id: run.traceId ?? null,
    parent_run_id: run.parentRunId ?? null,
    started_at: run.metadata.startedAt,
    completed_at: run.metadata.completedAt ?? null,
    duration_ms: run.metadata.durationMs ?? null,
    error: run.error ?? null,
    tool: run.tool ?? null,
    tool_payload: run.toolPayload ?? null,
    options: run.options ?? null,
    input_hash: inputHash ?? null,
    file_artifacts: run.fileArtifacts ?? null,
    result_storage_uri: run.resultStorageUri ?? null,
    executor: run.executor ?? null,
    allowed_tool_ids: run.allowedToolIds ?? null,
    allowed_system_ids: run.allowedSystemIds ?? null,
    attempt: run.attempt ?? 1,
    state: run.state ?? null,
    schedule_id: run.scheduleId ?? null,
  };
}

export const RUN_RECORD_TYPES = `run_id text, tool_id text, status text, request_source text, user_id text, system_ids text[],
  execution_mode text, trace_id text, parent_run_id text, started_at timestamptz, completed_at timestamptz,
  duration_ms bigint, error text, tool jsonb, tool_payload jsonb, options jsonb, input_hash text,
  file_artifacts jsonb, result_storage_uri text, executor text, allowed_tool_ids text[], allowed_system_ids text[],
  attempt integer, state jsonb, schedule_id text`;

export const RUN_INSERT_COLUMNS = `run_id, tool_id, status, request_source, user_id, system_ids, execution_mode, trace_id,
  parent_run_id, started_at, completed_at, duration_ms, error, tool, tool_payload, options, input_hash,
  file_artifacts, result_storage_uri, executor, allowed_tool_ids, allowed_system_ids, attempt, state, schedule_id`;

/**
 * One statement inserts any number of runs: the rows travel as one JSON array parameter ($1). `WHERE true`
 * lets an ON CONFLICT clause follow (SQLite would read it as a join constraint otherwise).
 */
export function insertRunsFromJson(d: Dialect): string {
  return `INSERT INTO runs (${RUN_INSERT_COLUMNS})
  SELECT ${RUN_INSERT_COLUMNS} FROM ${d.records('$1', 'r', RUN_RECORD_TYPES)} WHERE true`;
}

const BULK_BATCH_ROWS = 5_000;

/** Bulk insert for seeding (tests, benchmarks, imports). Fails on an existing run id. Returns rows inserted. */
export async function insertRuns(db: Db, runs: readonly StoredRun[]): Promise<number> {
  let inserted = 0;
  for (let start = 0; start < runs.length; start += BULK_BATCH_ROWS) {
    const batch = runs.slice(start, start + BULK_BATCH_ROWS).map((run) => runRecord(run, undefined));
    const result = await db.query(insertRunsFromJson(db.dialect), [JSON.stringify(batch)]);
    inserted += result.rowCount;
  }
  return inserted;
}

export async function getRun(db: Db, runId: string): Promise<StoredRun | undefined> {
  const { rows } = await db.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = $1`, [runId]);
  return rows[0] ? runFromRow(rows[0]) : undefined;
}

/** The terminal columns of a run, from the error in $2 and the completion time in $3. */
export function terminalSet(d: Dialect, status: 'aborted' | 'failed'): string {
  return `status = '${status}', error = $2, completed_at = ${d.timestamp('$3')},
          duration_ms = ${d.durationMs('started_at', '$3')}`;
}

/**
 * Cancels a running run: the authoritative terminal write of a cancel. Returns the aborted run, or undefined
 * when it was not running (unknown, or already terminal: the earlier terminal write stands).
 */
export async function abortRun(
  db: Db,
  runId: string,
  opts: { error: string; completedAt: string },
): Promise<StoredRun | undefined> {
  const { rows } = await db.query<RunRow>(
    `UPDATE runs SET ${terminalSet(db.dialect, 'aborted')}
      WHERE run_id = $1 AND status = 'running'
      RETURNING ${RUN_COLUMNS}`,
    [runId, opts.error, opts.completedAt],
  );
  return rows[0] ? runFromRow(rows[0]) : undefined;
}

/**
 * Crash recovery: fails every running run (only those of executor, when given) with error. Returns their ids.
 */
export async function failRunningRuns(
  db: Db,
  opts: { executor?: string; error: string; completedAt: string },
): Promise<string[]> {
  const { rows } = await db.query<{ run_id: string }>(
    `UPDATE runs SET ${terminalSet(db.dialect, 'failed')}
      WHERE status = 'running' AND (${db.dialect.typed('$1', 'text')} IS NULL OR executor = $1)
      RETURNING run_id`,
    [opts.executor ?? null, opts.error, opts.completedAt],
  );
  return rows.map((row) => row.run_id).sort();
}

/**
 * Startup recovery of one process: fails the running runs that some executor had started (executor set)
 * other than exceptExecutor, the process now starting. Runs not started yet (accepted async runs, executor
 * NULL) are left for their start. Returns the ids failed.
 */
export async function failStartedRuns(
  db: Db,
  opts: { exceptExecutor?: string; error: string; completedAt: string },
): Promise<string[]> {
  const { rows } = await db.query<{ run_id: string }>(
    `UPDATE runs SET ${terminalSet(db.dialect, 'failed')}
      WHERE status = 'running' AND executor IS NOT NULL
        AND (${db.dialect.typed('$1', 'text')} IS NULL OR executor <> $1)
      RETURNING run_id`,
    [opts.exceptExecutor ?? null, opts.error, opts.completedAt],
  );
  return rows.map((row) => row.run_id).sort();
}

/**
 * The running runs some executor other than exceptExecutor had started (executor set), oldest first: what
 * startup recovery decides about, one by one (retried or failed: runs/interrupted.ts).
 */
export async function listStartedRuns(db: Db, opts: { exceptExecutor?: string }): Promise<StoredRun[]> {
  const { rows } = await db.query<RunRow>(
    `SELECT ${RUN_COLUMNS} FROM runs
      WHERE status = 'running' AND executor IS NOT NULL
        AND (${db.dialect.typed('$1', 'text')} IS NULL OR executor <> $1)
      ORDER BY started_at, run_id`,
    [opts.exceptExecutor ?? null],
  );
  return rows.map(runFromRow);
}

/**
 * Hands a running run back for another attempt: executor cleared (so the next launcher claims it), attempt
 * + 1, and the lost attempt's step results dropped (the new attempt starts over and writes its own). Only
 * while the run is running at attempt fromAttempt, still held by fromExecutor when given, and without any
 * completion effect (notification, chain) in the outbox: a run whose outcome was announced never runs again.
 * Its runtime credentials stay until the run is terminal. Returns the run as handed back, or undefined.
 */
export async function retryRun(
  db: Db,
  runId: string,
  opts: { fromAttempt: number; fromExecutor?: string },
): Promise<StoredRun | undefined> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<RunRow>(
      `UPDATE runs SET executor = NULL, attempt = attempt + 1
        WHERE run_id = $1 AND status = 'running' AND attempt = $2
          AND (${tx.dialect.typed('$3', 'text')} IS NULL OR executor = $3)
          AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.run_id = $1 AND o.kind IN ('notify', 'chain'))
        RETURNING ${RUN_COLUMNS}`,
      [runId, opts.fromAttempt, opts.fromExecutor ?? null],
    );
    if (!rows[0]) return undefined;
    await tx.query('DELETE FROM run_step_results WHERE run_id = $1', [runId]);
    return runFromRow(rows[0]);
  });
}

/**
 * Makes executor the one process executing a running run that no executor has started yet. Returns the
 * run, or undefined when it is not running or already claimed (by any executor, this one included, so a
 * repeated launch never executes a run twice).
 */
export async function claimRun(db: Db, runId: string, executor: string): Promise<StoredRun | undefined> {
  const { rows } = await db.query<RunRow>(
    `UPDATE runs SET executor = $2
      WHERE run_id = $1 AND status = 'running' AND executor IS NULL
      RETURNING ${RUN_COLUMNS}`,
    [runId, executor],
  );
  return rows[0] ? runFromRow(rows[0]) : undefined;
}

export interface ListRunsQuery {
  /** The page of rows, ordered started_at DESC, run_id DESC. */
  sql: string;
  params: unknown[];
  /** How many rows match the filter. */
  countSql: string;
  countParams: unknown[];
}

/** Exported so tests can EXPLAIN exactly the statements listRuns runs (on Postgres unless `d` says otherwise). */
export function buildListRunsQuery(filter: ListRunsFilter, d: Dialect = PG_DIALECT): ListRunsQuery {
  if (!Number.isInteger(filter.page) || filter.page < 1) throw new RangeError('page must be an integer >= 1');
  if (!Number.isInteger(filter.limit) || filter.limit < 1)
    throw new RangeError('limit must be an integer >= 1');
  const conditions: string[] = [];
  const params: unknown[] = [];
  const param = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  if (filter.toolId !== undefined) conditions.push(`tool_id = ${param(filter.toolId)}`);
  if (filter.toolIds !== undefined) conditions.push(d.inArray('tool_id', param([...filter.toolIds])));
  if (filter.status !== undefined) conditions.push(`status = ${param(filter.status)}`);
  if (filter.requestSources !== undefined) {
    conditions.push(d.inArray('request_source', param([...filter.requestSources])));
  }
  if (filter.userId !== undefined) conditions.push(`user_id = ${param(filter.userId)}`);
  if (filter.systemId !== undefined) conditions.push(d.arrayContains('system_ids', param(filter.systemId)));
  // A range on the last column before run_id of every list index: each filter's index serves it.
  if (filter.startedAfter !== undefined)
    conditions.push(`started_at >= ${d.timestamp(param(filter.startedAfter))}`);
  if (filter.startedBefore !== undefined)
    conditions.push(`started_at < ${d.timestamp(param(filter.startedBefore))}`);
  const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
  const countParams = [...params];
  if (filter.after !== undefined) {
    // A row comparison in the index's order: the scan starts right after the cursor's row.
    const after = `(started_at, run_id) < (${d.timestamp(param(filter.after.startedAt))}, ${d.typed(param(filter.after.runId), 'text')})`;
    // One row more than the page tells whether another page follows.
    const limit = param(filter.limit + 1);
    return {
      sql: `SELECT ${RUN_COLUMNS} FROM runs ${where ? `${where} AND ${after}` : `WHERE ${after}`}
             ORDER BY started_at DESC, run_id DESC LIMIT ${limit}`,
      params,
      countSql: `SELECT count(*) AS total FROM runs ${where}`,
      countParams,
    };
  }
  const limit = param(filter.limit);
  const offset = param((filter.page - 1) * filter.limit);
  return {
    sql: `SELECT ${RUN_COLUMNS} FROM runs ${where} ORDER BY started_at DESC, run_id DESC LIMIT ${limit} OFFSET ${offset}`,
    params,
    countSql: `SELECT count(*) AS total FROM runs ${where}`,
    countParams,
  };
}

export async function listRuns(db: Db, filter: ListRunsFilter): Promise<RunPage> {
  const query = buildListRunsQuery(filter, db.dialect);
  if (filter.toolIds?.length === 0) return { runs: [], total: 0, hasMore: false };
  const [page, count] = await Promise.all([
    db.query<RunRow>(query.sql, query.params),
    db.query<{ total: number | string | bigint }>(query.countSql, query.countParams),
  ]);
  const total = toNumber(count.rows[0]?.total ?? 0);
  const runs = page.rows.map(runFromRow);
  if (filter.after !== undefined) {
    return { runs: runs.slice(0, filter.limit), total, hasMore: runs.length > filter.limit };
  }
  return { runs, total, hasMore: (filter.page - 1) * filter.limit + runs.length < total };
}
