import type { Db } from '../driver.ts';
import { toIso, toNumber } from './values.ts';

/**
 * Run slots (migration 26): the runs counted against a tool's maxConcurrentRuns and against an API key's
 * quotas (concurrent runs, runs per minute), in the store, so every API replica, the operator and the runner
 * Pods it admits count the same runs. A slot is released by its run's terminal write, whoever makes it (the
 * row stops counting once its run is not running; it is deleted by the next claim that looks): no terminal
 * writer has to know about slots. Before a run has a row in `runs` (a sync run's record is written while it
 * executes; an unrecorded run has none), its slot counts until expires_at, which a caller sets past the
 * run's timeout. A tool's queue is first come, first served (tool_seq): a waiting run gets a slot only when
 * no run that waits longer could take it.
 *
 * Claims serialise per key and per tool: a transaction-scoped advisory lock on Postgres (key first, then
 * tool, always in that order), SQLite's single writer embedded.
 */

export interface ToolSlotRequest {
  toolId: string;
  limit: number;
  /** queue: take a place in the tool's queue when it is full; refuse: refused instead. */
  whenAtCapacity: 'queue' | 'refuse';
}

export interface KeyQuotaRequest {
  keyId: string;
  runsPerMinute?: number | undefined;
  concurrentRuns?: number | undefined;
}

export interface SlotClaimRequest {
  runId: string;
  tool?: ToolSlotRequest | undefined;
  key?: KeyQuotaRequest | undefined;
  /** Until when the slot counts while its run has no row in runs (ISO). */
  expiresAt: string;
  now: Date;
}

export type ToolSlot =
  | { state: 'held' }
  | { state: 'waiting'; position: number; inUse: number; limit: number }
  | { state: 'refused'; inUse: number; limit: number };

/** What a claim says of the key's quotas. */
export type KeyQuotaState =
  | { refused?: undefined; runsPerMinute?: RateState; concurrentRuns?: { limit: number; remaining: number } }
  | { refused: 'runsPerMinute'; limit: number; resetSeconds: number }
  | { refused: 'concurrentRuns'; limit: number };

export interface RateState {
  limit: number;
  /** Runs the key may still start in this minute. */
  remaining: number;
  /** Seconds until the next minute starts (at least 1). */
  resetSeconds: number;
}

export interface SlotClaim {
  tool?: ToolSlot;
  key?: KeyQuotaState;
}

/** Where a run waits in its tool's queue (the Run view's `waiting`). */
export interface WaitingSlot {
  runId: string;
  toolId: string;
  position: number;
  inUse: number;
  since: string;
}

export interface RunSlotQueries {
  /**
   * Counts the run against its key's quotas and its tool's limit, all or nothing: a refusal by either
   * writes nothing (a refused run uses no quota). Asked again for a run that holds or waits, it answers for
   * the same place (a waiting run moves up; it is granted once nobody waiting longer could be).
   */
  claim(request: SlotClaimRequest): Promise<SlotClaim>;
  /** Frees the run's slot at once (a run that ends without a terminal write of its own: unrecorded, refused). */
  release(runId: string): Promise<void>;
  /** The runs of these ids that wait in their tool's queue, with their place. */
  waiting(runIds: readonly string[], now: Date): Promise<WaitingSlot[]>;
}

/** Whether a slot row (alias s, its run LEFT JOINed as r) still counts at $now. */
const alive = (now: string) =>
  `((r.run_id IS NOT NULL AND r.status = 'running') OR (r.run_id IS NULL AND s.expires_at > ${now}))`;

const WINDOW_MS = 60_000;

export function bindRunSlotQueries(db: Db): RunSlotQueries {
  return {
    claim: (request) => db.transaction((tx) => claim(tx, request)),
    release: async (runId) => {
      await db.query('DELETE FROM run_slots WHERE run_id = $1', [runId]);
    },
    waiting: (runIds, now) => waiting(db, runIds, now),
  };
}

async function lock(tx: Db, name: string): Promise<void> {
  // SQLite: one writer at a time already (dialect.sharedByProcesses).
  if (tx.dialect.sharedByProcesses) {
    await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1::text, 26))', [name]);
  }
}

interface SlotRow {
  run_id: string;
  tool_id: string | null;
  tool_state: 'held' | 'waiting' | null;
  tool_seq: number | string | null;
  key_id: string | null;
}

async function claim(tx: Db, request: SlotClaimRequest): Promise<SlotClaim> {
  const d = tx.dialect;
  const { tool, key, runId } = request;
  if (key) await lock(tx, `key:${key.keyId}`);
  if (tool) await lock(tx, `tool:${tool.toolId}`);
  const now = d.timestamp('$1');
  const nowIso = request.now.toISOString();
  // Slots that no longer count: their runs ended, or they expired before a run row appeared.
  await tx.query(
    `DELETE FROM run_slots WHERE run_id IN (
       SELECT s.run_id FROM run_slots s LEFT JOIN runs r ON r.run_id = s.run_id
        WHERE (s.tool_id = ${d.typed('$2', 'text')} OR s.key_id = ${d.typed('$3', 'text')})
          AND NOT ${alive(now)})`,
    [nowIso, tool?.toolId ?? null, key?.keyId ?? null],
  );
  const { rows: own } = await tx.query<SlotRow>(
    'SELECT run_id, tool_id, tool_state, tool_seq, key_id FROM run_slots WHERE run_id = $1',
    [runId],
  );
  const mine = own[0];
  const result: SlotClaim = {};
  const granted: Extract<KeyQuotaState, { refused?: undefined }> = {};

  let counts: { minute: number; windowStart: string; resetSeconds: number } | undefined;
  if (key && mine?.key_id !== key.keyId) {
    if (key.concurrentRuns !== undefined) {
      const inUse = await countKeyRuns(tx, key.keyId, runId);
      if (inUse >= key.concurrentRuns) {
        return { key: { refused: 'concurrentRuns', limit: key.concurrentRuns } };
      }
      granted.concurrentRuns = { limit: key.concurrentRuns, remaining: key.concurrentRuns - inUse - 1 };
      result.key = granted;
    }
    if (key.runsPerMinute !== undefined) {
      const start = Math.floor(request.now.getTime() / WINDOW_MS) * WINDOW_MS;
      const windowStart = new Date(start).toISOString();
      const resetSeconds = Math.max(1, Math.ceil((start + WINDOW_MS - request.now.getTime()) / 1000));
      await tx.query(
        `DELETE FROM api_key_run_counts WHERE key_id = $1 AND window_start < ${d.timestamp('$2')}`,
        [key.keyId, windowStart],
      );
      const { rows } = await tx.query<{ runs: number | string }>(
        `SELECT runs FROM api_key_run_counts WHERE key_id = $1 AND window_start = ${d.timestamp('$2')}`,
        [key.keyId, windowStart],
      );
      const minute = toNumber(rows[0]?.runs ?? 0);
      if (minute >= key.runsPerMinute) {
        return { key: { refused: 'runsPerMinute', limit: key.runsPerMinute, resetSeconds } };
      }
      counts = { minute, windowStart, resetSeconds };
      granted.runsPerMinute = {
        limit: key.runsPerMinute,
        remaining: key.runsPerMinute - minute - 1,
        resetSeconds,
      };
      result.key = granted;
    }
  }

  let toolState: 'held' | 'waiting' | undefined;
  let toolSeq: number | undefined;
  if (tool) {
    const slot = await toolSlot(tx, tool, mine);
    if (slot.slot.state === 'refused') return { ...result, tool: slot.slot };
    result.tool = slot.slot;
    toolState = slot.slot.state;
    toolSeq = slot.seq;
  }

  // Nothing refused: write what was granted.
  if (counts && key) {
    await tx.query(
      `INSERT INTO api_key_run_counts (key_id, window_start, runs) VALUES ($1, ${d.timestamp('$2')}, 1)
       ON CONFLICT (key_id, window_start) DO UPDATE SET runs = api_key_run_counts.runs + 1`,
      [key.keyId, counts.windowStart],
    );
  }
  const keyId = key ? key.keyId : (mine?.key_id ?? null);
  if (mine) {
    await tx.query(
      `UPDATE run_slots SET key_id = $2, tool_id = $3, tool_state = $4, tool_seq = $5 WHERE run_id = $1`,
      [
        runId,
        keyId,
        tool ? tool.toolId : mine.tool_id,
        toolState ?? mine.tool_state,
        toolSeq ?? (mine.tool_seq === null ? null : toNumber(mine.tool_seq)),
      ],
    );
  } else if (key || tool) {
    await tx.query(
      `INSERT INTO run_slots (run_id, tool_id, tool_state, tool_seq, key_id, expires_at)
       VALUES ($1, $2, $3, $4, $5, ${d.timestamp('$6')})`,
      [runId, tool?.toolId ?? null, toolState ?? null, toolSeq ?? null, keyId, request.expiresAt],
    );
  }
  return result;
}

async function countKeyRuns(tx: Db, keyId: string, exceptRunId: string): Promise<number> {
  const { rows } = await tx.query<{ n: number | string }>(
    `SELECT count(*) AS n FROM run_slots s WHERE s.key_id = $1 AND s.run_id <> $2`,
    [keyId, exceptRunId],
  );
  return toNumber(rows[0]?.n ?? 0);
}

/** The run's place at its tool: held, waiting (and where), or refused; and its queue number. */
async function toolSlot(
  tx: Db,
  tool: ToolSlotRequest,
  mine: SlotRow | undefined,
): Promise<{ slot: ToolSlot; seq?: number }> {
  if (mine?.tool_id === tool.toolId && mine.tool_state === 'held') return { slot: { state: 'held' } };
  const mySeq = mine?.tool_id === tool.toolId && mine.tool_seq !== null ? toNumber(mine.tool_seq) : undefined;
  // Dead rows of this tool were deleted above: every row left counts.
  const { rows } = await tx.query<{
    held: number | string | null;
    ahead: number | string | null;
    last: number | string | null;
  }>(
    `SELECT sum(CASE WHEN tool_state = 'held' THEN 1 ELSE 0 END) AS held,
            sum(CASE WHEN tool_state = 'waiting' AND (CAST($2 AS bigint) IS NULL OR tool_seq < CAST($2 AS bigint))
                     THEN 1 ELSE 0 END) AS ahead,
            max(tool_seq) AS last
       FROM run_slots WHERE tool_id = $1 AND run_id <> $3`,
    [tool.toolId, mySeq ?? null, mine?.run_id ?? ''],
  );
  const held = toNumber(rows[0]?.held ?? 0);
  const ahead = toNumber(rows[0]?.ahead ?? 0);
  const last = rows[0]?.last == null ? 0 : toNumber(rows[0].last);
  const seq = mySeq ?? last + 1;
  if (held + ahead < tool.limit) return { slot: { state: 'held' }, seq };
  if (tool.whenAtCapacity === 'refuse') return { slot: { state: 'refused', inUse: held, limit: tool.limit } };
  return { slot: { state: 'waiting', position: ahead + 1, inUse: held, limit: tool.limit }, seq };
}

async function waiting(db: Db, runIds: readonly string[], now: Date): Promise<WaitingSlot[]> {
  if (runIds.length === 0) return [];
  const d = db.dialect;
  const { rows } = await db.query<{
    run_id: string;
    tool_id: string;
    created_at: Date | string;
    ahead: number | string;
    held: number | string;
  }>(
    `SELECT w.run_id, w.tool_id, w.created_at,
            (SELECT count(*) FROM run_slots s LEFT JOIN runs r ON r.run_id = s.run_id
              WHERE s.tool_id = w.tool_id AND s.tool_state = 'waiting' AND s.tool_seq < w.tool_seq
                AND ${alive(d.timestamp('$2'))}) AS ahead,
            (SELECT count(*) FROM run_slots s LEFT JOIN runs r ON r.run_id = s.run_id
              WHERE s.tool_id = w.tool_id AND s.tool_state = 'held' AND ${alive(d.timestamp('$2'))}) AS held
       FROM run_slots w
      WHERE ${d.inArray('w.run_id', '$1')} AND w.tool_state = 'waiting'`,
    [[...runIds], now.toISOString()],
  );
  return rows.map((row) => ({
    runId: row.run_id,
    toolId: row.tool_id,
    position: toNumber(row.ahead) + 1,
    inUse: toNumber(row.held),
    since: toIso(row.created_at),
  }));
}
