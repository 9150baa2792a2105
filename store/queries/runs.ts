import type { JsonObject } from '../../crds/json.ts';
import type { Db } from '../driver.ts';
import type {
  ExecutionMode,
  InsertRunResult,
  ListRunsFilter,
  RunPage,
  RunStatus,
  StoredFileArtifact,
  StoredRun,
} from '../types.ts';
import { optional, toIso, toNumber } from './values.ts';

/** Column list of every query that returns runs, in the shape RunRow describes. */
export const RUN_COLUMNS = `run_id, tool_id, status, request_source, user_id, system_ids, execution_mode, trace_id,
  parent_run_id, started_at, completed_at, duration_ms, error, tool, tool_payload, options, file_artifacts,
  result_storage_uri, executor`;

interface RunRow {
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
  return run;
}

/** The JSON record jsonb_to_recordset turns into a row; keys are the column names. */
function runRecord(run: StoredRun, inputHash: string | undefined): Record<string, unknown> {
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
  };
}

const RECORD_TYPES = `run_id text, tool_id text, status text, request_source text, user_id text, system_ids text[],
  execution_mode text, trace_id text, parent_run_id text, started_at timestamptz, completed_at timestamptz,
  duration_ms bigint, error text, tool jsonb, tool_payload jsonb, options jsonb, input_hash text,
  file_artifacts jsonb, result_storage_uri text, executor text`;

const INSERT_COLUMNS = `run_id, tool_id, status, request_source, user_id, system_ids, execution_mode, trace_id,
  parent_run_id, started_at, completed_at, duration_ms, error, tool, tool_payload, options, input_hash,
  file_artifacts, result_storage_uri, executor`;

/** One statement inserts any number of runs: the rows travel as one JSON array parameter. */
const INSERT_FROM_JSON = `INSERT INTO runs (${INSERT_COLUMNS})
  SELECT ${INSERT_COLUMNS} FROM jsonb_to_recordset($1::jsonb) AS r(${RECORD_TYPES})`;

/**
 * Inserts a run unless its id exists. Race-safe: of two concurrent inserts of one id exactly one inserts; the
 * other waits for it to commit and then sees it. A retry with the same tool and input hash gets the existing run.
 */
export async function insertRun(
  db: Db,
  run: StoredRun,
  inputHash: string | undefined,
): Promise<InsertRunResult> {
  const payload = JSON.stringify([runRecord(run, inputHash)]);
  for (let attempt = 0; attempt < 3; attempt++) {
    const inserted = await db.query<RunRow>(
      `${INSERT_FROM_JSON} ON CONFLICT (run_id) DO NOTHING RETURNING ${RUN_COLUMNS}`,
      [payload],
    );
    const row = inserted.rows[0];
    if (row) return { status: 'inserted', run: runFromRow(row) };
    const existing = await db.query<RunRow & { input_hash: string | null }>(
      `SELECT ${RUN_COLUMNS}, input_hash FROM runs WHERE run_id = $1`,
      [run.runId],
    );
    const found = existing.rows[0];
    // Deleted between the two statements (retention): try the insert again.
    if (!found) continue;
    const sameRequest = found.tool_id === run.toolId && found.input_hash === (inputHash ?? null);
    return sameRequest ? { status: 'existing', run: runFromRow(found) } : { status: 'conflict' };
  }
  throw new Error(`run ${run.runId} kept appearing and disappearing while being inserted`);
}

const BULK_BATCH_ROWS = 5_000;

/** Bulk insert for seeding (tests, benchmarks, imports). Fails on an existing run id. Returns rows inserted. */
export async function insertRuns(db: Db, runs: readonly StoredRun[]): Promise<number> {
  let inserted = 0;
  for (let start = 0; start < runs.length; start += BULK_BATCH_ROWS) {
    const batch = runs.slice(start, start + BULK_BATCH_ROWS).map((run) => runRecord(run, undefined));
    const result = await db.query(INSERT_FROM_JSON, [JSON.stringify(batch)]);
    inserted += result.rowCount;
  }
  return inserted;
}

export async function getRun(db: Db, runId: string): Promise<StoredRun | undefined> {
  const { rows } = await db.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = $1`, [runId]);
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

/** Exported so tests can EXPLAIN exactly the statements listRuns runs. */
export function buildListRunsQuery(filter: ListRunsFilter): ListRunsQuery {
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
  if (filter.toolIds !== undefined) conditions.push(`tool_id = ANY(${param([...filter.toolIds])}::text[])`);
  if (filter.status !== undefined) conditions.push(`status = ${param(filter.status)}`);
  if (filter.requestSources !== undefined) {
    conditions.push(`request_source = ANY(${param([...filter.requestSources])}::text[])`);
  }
  if (filter.userId !== undefined) conditions.push(`user_id = ${param(filter.userId)}`);
  if (filter.systemId !== undefined)
    conditions.push(`system_ids @> ARRAY[${param(filter.systemId)}]::text[]`);
  const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
  const countParams = [...params];
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
  const query = buildListRunsQuery(filter);
  if (filter.toolIds?.length === 0) return { runs: [], total: 0, hasMore: false };
  const [page, count] = await Promise.all([
    db.query<RunRow>(query.sql, query.params),
    db.query<{ total: number | string | bigint }>(query.countSql, query.countParams),
  ]);
  const total = toNumber(count.rows[0]?.total ?? 0);
  const runs = page.rows.map(runFromRow);
  return { runs, total, hasMore: (filter.page - 1) * filter.limit + runs.length < total };
}
