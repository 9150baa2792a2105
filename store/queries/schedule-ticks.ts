import type { Db } from '../driver.ts';
import { toIso, toNumber } from './values.ts';

/**
 * Tick claims of schedules (migration 17): the row of a (schedule, tick) is inserted by exactly one
 * process, and that process acts on the tick (starts its run, or records why it did not). Inserting is
 * the claim, so replicas racing for a tick and a process restarted after a crash agree on who owns it.
 * Times are ISO texts.
 */
export type TickOutcome = 'started' | 'skipped' | 'missed';

export interface TickClaim {
  /** The ToolSchedule's uid: a schedule deleted and created again under its name starts afresh. */
  scheduleUid: string;
  tickAt: string;
  namespace: string;
  /** The ToolSchedule's name (the REST API's schedule id, unless its spec.id says another). */
  scheduleId: string;
  outcome: TickOutcome;
  /** Why a tick was skipped or missed (a named reason). */
  reason?: string;
  /** The run of the tick's latest attempt (outcome started). */
  runId?: string;
  /** 1, plus one per retry of a failed run of the tick. */
  attempt: number;
  claimedBy: string;
  claimedAt: string;
}

export type NewTickClaim = Omit<TickClaim, 'attempt'>;

/** Rows kept per schedule: the newest one is what counts, a few before it help whoever looks. */
const KEPT_PER_SCHEDULE = 20;

export interface ScheduleTickQueries {
  /** Claims the tick; false when any process claimed it before. Older claims of the schedule are pruned. */
  claim(claim: NewTickClaim): Promise<boolean>;
  /** The newest claimed tick of the schedule. */
  latest(scheduleUid: string): Promise<TickClaim | undefined>;
  /**
   * Claims the next attempt of a started tick whose run failed: true for exactly one caller, while the
   * tick's attempt is still fromAttempt; the tick's run becomes runId.
   */
  claimRetry(scheduleUid: string, tickAt: string, fromAttempt: number, runId: string): Promise<boolean>;
  /** Drops the claims of a schedule that was deleted; returns how many. */
  forget(scheduleUid: string): Promise<number>;
  /** Ids of the runs of the tool's schedule (by schedule id) that are still running, oldest first. */
  runningRuns(toolId: string, scheduleId: string): Promise<string[]>;
  /** The running runs of several schedules in one query, oldest first (the REST list's activeRunIds). */
  runningRunsOf(
    schedules: ReadonlyArray<{ toolId: string; scheduleId: string }>,
  ): Promise<Array<{ toolId: string; scheduleId: string; runId: string }>>;
}

interface Row {
  schedule_uid: string;
  tick_at: Date | string;
  namespace: string;
  schedule_id: string;
  outcome: TickOutcome;
  reason: string | null;
  run_id: string | null;
  attempt: number | string | bigint;
  claimed_by: string;
  claimed_at: Date | string;
}

function claimFromRow(row: Row): TickClaim {
  return {
    scheduleUid: row.schedule_uid,
    tickAt: toIso(row.tick_at),
    namespace: row.namespace,
    scheduleId: row.schedule_id,
    outcome: row.outcome,
    ...(row.reason !== null ? { reason: row.reason } : {}),
    ...(row.run_id !== null ? { runId: row.run_id } : {}),
    attempt: toNumber(row.attempt),
    claimedBy: row.claimed_by,
    claimedAt: toIso(row.claimed_at),
  };
}

export function bindScheduleTickQueries(db: Db): ScheduleTickQueries {
  const d = db.dialect;
  return {
    async claim(c) {
      const tickAt = toIso(c.tickAt);
      const { rowCount } = await db.query(
        `INSERT INTO schedule_ticks (schedule_uid, tick_at, namespace, schedule_id, outcome, reason, run_id, claimed_by, claimed_at)
         VALUES ($1, ${d.timestamp('$2')}, $3, $4, $5, $6, $7, $8, ${d.timestamp('$9')})
         ON CONFLICT (schedule_uid, tick_at) DO NOTHING`,
        [
          c.scheduleUid,
          tickAt,
          c.namespace,
          c.scheduleId,
          c.outcome,
          c.reason ?? null,
          c.runId ?? null,
          c.claimedBy,
          toIso(c.claimedAt),
        ],
      );
      if (rowCount === 0) return false;
      // Only the newest claim is read; keeping a few is for people, keeping all would grow without end.
      await db.query(
        `DELETE FROM schedule_ticks WHERE schedule_uid = $1 AND tick_at < (
           SELECT tick_at FROM schedule_ticks WHERE schedule_uid = $1
           ORDER BY tick_at DESC LIMIT 1 OFFSET ${KEPT_PER_SCHEDULE - 1})`,
        [c.scheduleUid],
      );
      return true;
    },
    async latest(scheduleUid) {
      const { rows } = await db.query<Row>(
        `SELECT * FROM schedule_ticks WHERE schedule_uid = $1 ORDER BY tick_at DESC LIMIT 1`,
        [scheduleUid],
      );
      return rows[0] ? claimFromRow(rows[0]) : undefined;
    },
    async claimRetry(scheduleUid, tickAt, fromAttempt, runId) {
      const { rowCount } = await db.query(
        `UPDATE schedule_ticks SET attempt = attempt + 1, run_id = $4
          WHERE schedule_uid = $1 AND tick_at = ${d.timestamp('$2')} AND attempt = $3 AND outcome = 'started'`,
        [scheduleUid, toIso(tickAt), fromAttempt, runId],
      );
      return rowCount > 0;
    },
    async forget(scheduleUid) {
      const { rowCount } = await db.query('DELETE FROM schedule_ticks WHERE schedule_uid = $1', [
        scheduleUid,
      ]);
      return rowCount;
    },
    async runningRuns(toolId, scheduleId) {
      // Schedule ids are unique per tool: two tools' schedules may share one.
      const { rows } = await db.query<{ run_id: string }>(
        `SELECT run_id FROM runs WHERE schedule_id = $1 AND tool_id = $2 AND status = 'running'
          ORDER BY started_at, run_id`,
        [scheduleId, toolId],
      );
      return rows.map((row) => row.run_id);
    },
    async runningRunsOf(schedules) {
      if (schedules.length === 0) return [];
      const wanted = new Set(schedules.map((s) => `${s.toolId}\0${s.scheduleId}`));
      const { rows } = await db.query<{ run_id: string; tool_id: string; schedule_id: string }>(
        `SELECT run_id, tool_id, schedule_id FROM runs
          WHERE ${d.inArray('schedule_id', '$1')} AND status = 'running' ORDER BY started_at, run_id`,
        [[...new Set(schedules.map((s) => s.scheduleId))]],
      );
      return rows
        .filter((row) => wanted.has(`${row.tool_id}\0${row.schedule_id}`))
        .map((row) => ({ toolId: row.tool_id, scheduleId: row.schedule_id, runId: row.run_id }));
    },
  };
}
