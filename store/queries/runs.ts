import type { RecordingSummary } from '../../contract/api/recording.ts';
import { RUNS_OFFSET_MAX } from '../../contract/api/run.ts';
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
  result_storage_uri, executor, allowed_tool_ids, allowed_system_ids, attempt, state, warnings, schedule_id,
  resumed_from, reused_steps, recording`;

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
  resumed_from: string | null;
  reused_steps: number | string | bigint | null;
  recording: RecordingSummary | null;
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
  optional(run, 'resumedFrom', row.resumed_from);
  if (row.reused_steps !== null) run.reusedSteps = toNumber(row.reused_steps);
  optional(run, 'recording', row.recording);
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
    resumed_from: run.resumedFrom ?? null,
    reused_steps: run.reusedSteps ?? null,
  };
}

export const RUN_RECORD_TYPES = `run_id text, tool_id text, status text, request_source text, user_id text, system_ids text[],
  execution_mode text, trace_id text, parent_run_id text, started_at timestamptz, completed_at timestamptz,
  duration_ms bigint, error text, tool jsonb, tool_payload jsonb, options jsonb, input_hash text,
  file_artifacts jsonb, result_storage_uri text, executor text, allowed_tool_ids text[], allowed_system_ids text[],
  attempt integer, state jsonb, schedule_id text, resumed_from text, reused_steps integer`;

export const RUN_INSERT_COLUMNS = `run_id, tool_id, status, request_source, user_id, system_ids, execution_mode, trace_id,
  parent_run_id, started_at, completed_at, duration_ms, error, tool, tool_payload, options, input_hash,
  file_artifacts, result_storage_uri, executor, allowed_tool_ids, allowed_system_ids, attempt, state, schedule_id,
  resumed_from, reused_steps`;

/**
 * One statement inserts any number of runs: the rows travel as one JSON array parameter ($1). `WHERE true`
 * lets an ON CONFLICT clause follow (SQLite would read it as a join constraint otherwise).
 */
export function insertRunsFromJson(d: Dialect): string {
  return `INSERT INTO runs (${RUN_INSERT_COLUMNS})
  SELECT ${RUN_INSERT_COLUMNS} FROM ${d.records('$1', 'r', RUN_RECORD_TYPES)} WHERE true`;
}

const BULK_BATCH_ROWS = 5_000;

/**
 * Bulk insert for seeding (tests, benchmarks, imports), with the runs' run_systems rows. Fails on an existing
 * run id. Returns rows inserted.
 */
export async function insertRuns(db: Db, runs: readonly StoredRun[]): Promise<number> {
  let inserted = 0;
  for (let start = 0; start < runs.length; start += BULK_BATCH_ROWS) {
    const batch = runs.slice(start, start + BULK_BATCH_ROWS);
    const withSystems = batch.filter((run) => run.systemIds.length > 0).map((run) => run.runId);
    inserted += await db.transaction(async (tx) => {
      const records = batch.map((run) => runRecord(run, undefined));
      const result = await tx.query(insertRunsFromJson(tx.dialect), [JSON.stringify(records)]);
      if (withSystems.length > 0) {
        await tx.query(runSystemsInsertSql(tx.dialect, 'runs r', tx.dialect.inArray('r.run_id', '$1')), [
          withSystems,
        ]);
      }
      return result.rowCount;
    });
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
 * Fails the running runs that also match `where`, in which $1 is `executor` (the text NULL when not
 * given), with error. Returns their ids, sorted.
 */
async function failRuns(
  db: Db,
  where: (executor: string) => string,
  executor: string | undefined,
  opts: { error: string; completedAt: string },
): Promise<string[]> {
  const { rows } = await db.query<{ run_id: string }>(
    `UPDATE runs SET ${terminalSet(db.dialect, 'failed')}
      WHERE status = 'running' AND ${where(db.dialect.typed('$1', 'text'))}
      RETURNING run_id`,
    [executor ?? null, opts.error, opts.completedAt],
  );
  return rows.map((row) => row.run_id).sort();
}

/**
 * Crash recovery: fails every running run (only those of executor, when given) with error. Returns their ids.
 */
export function failRunningRuns(
  db: Db,
  opts: { executor?: string; error: string; completedAt: string },
): Promise<string[]> {
  return failRuns(db, (executor) => `(${executor} IS NULL OR executor = $1)`, opts.executor, opts);
}

/**
 * Startup recovery of one process: fails the running runs that some executor had started (executor set)
 * other than exceptExecutor, the process now starting. Runs not started yet (accepted async runs, executor
 * NULL) are left for their start. Returns the ids failed.
 */
export function failStartedRuns(
  db: Db,
  opts: { exceptExecutor?: string; error: string; completedAt: string },
): Promise<string[]> {
  return failRuns(
    db,
    (executor) => `executor IS NOT NULL AND (${executor} IS NULL OR executor <> $1)`,
    opts.exceptExecutor,
    opts,
  );
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
  /** The page of rows, ordered started_at DESC, run_id DESC, and one row more: it tells whether more follow. */
  sql: string;
  params: unknown[];
  /** How many rows match the filter, counted up to RUNS_TOTAL_CAP + 1 (see listRuns). */
  countSql: string;
  countParams: unknown[];
}

/**
 * `total` of a runs page is counted exactly up to this many runs, the runs offset paging can reach: a count
 * reads one index entry per run it counts, so beyond the cap it would cost O(matching runs) on every page
 * (seconds with 10 M runs). Above it, `total` is the cap and `totalExact` false.
 */
export const RUNS_TOTAL_CAP = RUNS_OFFSET_MAX;

/** RUN_COLUMNS of the runs table as `r` (in a join with run_systems, which has run_id and started_at too). */
const RUN_COLUMNS_OF_R = RUN_COLUMNS.split(',')
  .map((column) => `r.${column.trim()}`)
  .join(', ');

/**
 * The inserts of the run_systems rows (one per system of a run: the systemId filter's index) of the runs in
 * `source`, a row source with run_id, started_at and system_ids, aliased `r`.
 */
export function runSystemsInsertSql(d: Dialect, source: string, where = 'true'): string {
  return `INSERT INTO run_systems (system_id, started_at, run_id)
    SELECT s.value, r.started_at, r.run_id FROM ${source}, ${d.arrayElements('r.system_ids', 's')} WHERE ${where}
    ON CONFLICT DO NOTHING`;
}

/** A statement's parameter list: `add` appends a value and answers its placeholder. */
function parameters(): { params: unknown[]; add(value: unknown): string } {
  const params: unknown[] = [];
  return {
    params,
    add: (value) => {
      params.push(value);
      return `$${params.length}`;
    },
  };
}

/**
 * The upper time bound of a cursor page inside `startedBefore`, as one bound: SQLite seeks an index range
 * by one upper bound only (the first it sees), so with both it read from the range's top down to the
 * cursor. The tighter of the two makes the other redundant; `undefined` keeps both (equal to the
 * millisecond, or not comparable).
 */
function tighterBound(filter: ListRunsFilter): 'cursor' | 'startedBefore' | undefined {
  if (filter.after === undefined || filter.startedBefore === undefined) return undefined;
  const cursor = Date.parse(filter.after.startedAt);
  // Date.parse drops digits past the millisecond: the true bound lies in [before, before + 1 ms).
  const before = Date.parse(filter.startedBefore);
  if (cursor < before) return 'cursor';
  if (cursor >= before + 1) return 'startedBefore';
  return undefined;
}

/**
 * Exported so tests can EXPLAIN exactly the statements listRuns runs (on Postgres unless `d` says otherwise).
 * Every filter reads an index in the list's order (migrations 1, 21 and 22), so a page reads its rows and
 * stops, at any depth; the count stops after RUNS_TOTAL_CAP + 1 rows.
 */
export function buildListRunsQuery(filter: ListRunsFilter, d: Dialect = PG_DIALECT): ListRunsQuery {
  if (!Number.isInteger(filter.page) || filter.page < 1) throw new RangeError('page must be an integer >= 1');
  if (!Number.isInteger(filter.limit) || filter.limit < 1)
    throw new RangeError('limit must be an integer >= 1');
  // systemId walks run_systems (system_id, started_at, run_id) in list order and joins each row's run: the
  // list order and the time and cursor bounds then come from run_systems' key (`s.`), the rest from the run
  // (`r.`). CROSS JOIN keeps run_systems the outer loop on SQLite (its planner never reorders one); to
  // Postgres it is a plain join.
  const bySystem = filter.systemId !== undefined;
  const run = bySystem ? 'r.' : '';
  const key = bySystem ? 's.' : '';
  const joined = 'run_systems s CROSS JOIN runs r';
  const tighter = tighterBound(filter);
  const sources = filter.requestSources === undefined ? undefined : [...new Set(filter.requestSources)];
  const readsRuns = [filter.toolId, filter.toolIds, filter.status, filter.userId, sources].some(
    (value) => value !== undefined,
  );
  /**
   * The conditions of the filter but the request sources, on the statement's parameters `add`; `page` adds
   * the cursor, `join` the join of run_systems to runs (systemId).
   */
  const conditionsOf = (add: (value: unknown) => string, page: boolean, join: boolean): string[] => {
    const conditions: string[] = [];
    if (filter.systemId !== undefined) conditions.push(`s.system_id = ${add(filter.systemId)}`);
    if (filter.toolId !== undefined) conditions.push(`${run}tool_id = ${add(filter.toolId)}`);
    if (filter.toolIds !== undefined) conditions.push(d.inArray(`${run}tool_id`, add([...filter.toolIds])));
    if (filter.status !== undefined) conditions.push(`${run}status = ${add(filter.status)}`);
    if (filter.userId !== undefined) conditions.push(`${run}user_id = ${add(filter.userId)}`);
    // A range on the last column before run_id of every list index: each filter's index serves it.
    if (filter.startedAfter !== undefined)
      conditions.push(`${key}started_at >= ${d.timestamp(add(filter.startedAfter))}`);
    if (filter.startedBefore !== undefined && !(page && tighter === 'cursor'))
      conditions.push(`${key}started_at < ${d.timestamp(add(filter.startedBefore))}`);
    if (page && filter.after !== undefined && tighter !== 'startedBefore') {
      // Right after the cursor's row in the index's order: the scan starts there.
      conditions.push(
        d.rowLessThan(
          [`${key}started_at`, `${key}run_id`],
          [d.timestamp(add(filter.after.startedAt)), d.typed(add(filter.after.runId), 'text')],
        ),
      );
    }
    if (bySystem && join) conditions.push('r.run_id = s.run_id');
    return conditions;
  };
  const where = (conditions: readonly string[]) =>
    conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
  /** The request source condition: one source is an equality, several an IN list. */
  const sourceCondition = (add: (value: unknown) => string, list: readonly string[]): string =>
    list.length === 1
      ? `${run}request_source = ${add(list[0])}`
      : d.inArray(`${run}request_source`, add(list));

  const count = parameters();
  // The count reads a run only when a condition is on the run.
  const countConditions = conditionsOf(count.add, false, readsRuns);
  // The count needs no order: the IN list seeks each source's range of runs_source_started_idx.
  if (sources !== undefined) countConditions.push(sourceCondition(count.add, sources));
  // The count of systemId alone needs no run: run_systems' key has it all.
  const countFrom = bySystem ? (readsRuns ? joined : 'run_systems s') : 'runs';
  const countSql = `SELECT count(*) AS total FROM (
      SELECT 1 FROM ${countFrom} ${where(countConditions)} LIMIT ${RUNS_TOTAL_CAP + 1}) AS capped`;

  const page = parameters();
  const order = `ORDER BY ${key}started_at DESC, ${key}run_id DESC`;
  // One row more than the page tells whether another page follows.
  const offset = filter.after === undefined ? (filter.page - 1) * filter.limit : 0;
  const limit = page.add(filter.limit + 1);
  const offsetClause = offset > 0 ? ` OFFSET ${page.add(offset)}` : '';
  const several = sources !== undefined && sources.length > 1;
  if (offset === 0 && !several) {
    // The page straight from the filter's index: a first page or a cursor page reads its rows and stops.
    const conditions = conditionsOf(page.add, true, bySystem);
    if (sources !== undefined) conditions.push(sourceCondition(page.add, sources));
    const columns = bySystem ? RUN_COLUMNS_OF_R : RUN_COLUMNS;
    const sql = `SELECT ${columns} FROM ${bySystem ? joined : 'runs'} ${where(conditions)} ${order} LIMIT ${limit}`;
    return { sql, params: page.params, countSql, countParams: count.params };
  }
  // An offset page, or several request sources: the page's run ids first, from the list index alone (it holds
  // the filter's columns, the start time and the run id), then only those runs. OFFSET steps over index
  // entries, not over whole runs (up to 10 000 of them at the deepest page), and the request sources'
  // merge sorts keys.
  const conditions = conditionsOf(page.add, true, bySystem && readsRuns);
  const keysFrom = bySystem ? (readsRuns ? joined : 'run_systems s') : 'runs';
  const keys = `${key}started_at AS started_at, ${key}run_id AS run_id`;
  let pageKeys: string;
  if (several) {
    // One ordered read of runs_source_started_idx per source, merged as they stream (SQLite's MERGE (UNION
    // ALL), Postgres's Merge Append) until the page is complete. As one IN list the index yields each
    // source's runs in turn, not in list order, so the planner either sorted every matching run or walked
    // runs_started_idx past every run of the other sources (a rare source: all of them).
    const reach = page.add(offset + filter.limit + 1);
    const arms = sources.map((source) =>
      d.orderedArm(
        `SELECT ${keys} FROM ${keysFrom} ${where([...conditions, `${run}request_source = ${page.add(source)}`])}`,
        order,
        reach,
      ),
    );
    pageKeys = `${arms.join(' UNION ALL ')} ORDER BY started_at DESC, run_id DESC LIMIT ${limit}${offsetClause}`;
  } else {
    if (sources !== undefined) conditions.push(sourceCondition(page.add, sources));
    pageKeys = `SELECT ${keys} FROM ${keysFrom} ${where(conditions)} ${order} LIMIT ${limit}${offsetClause}`;
  }
  const sql = `SELECT ${RUN_COLUMNS} FROM runs WHERE run_id IN (SELECT run_id FROM (${pageKeys}) AS page)
    ORDER BY started_at DESC, run_id DESC`;
  return { sql, params: page.params, countSql, countParams: count.params };
}

/**
 * A page of runs. `total` is exact up to RUNS_TOTAL_CAP matching runs; above, it is the cap and `totalExact`
 * is false. `hasMore` comes from the page's extra row, so it is right however many runs match.
 */
export async function listRuns(db: Db, filter: ListRunsFilter): Promise<RunPage> {
  const query = buildListRunsQuery(filter, db.dialect);
  if (filter.toolIds?.length === 0) return { runs: [], total: 0, totalExact: true, hasMore: false };
  const [page, count] = await Promise.all([
    db.query<RunRow>(query.sql, query.params),
    db.query<{ total: number | string | bigint }>(query.countSql, query.countParams),
  ]);
  const counted = toNumber(count.rows[0]?.total ?? 0);
  return {
    runs: page.rows.slice(0, filter.limit).map(runFromRow),
    total: Math.min(counted, RUNS_TOTAL_CAP),
    totalExact: counted <= RUNS_TOTAL_CAP,
    hasMore: page.rows.length > filter.limit,
  };
}
