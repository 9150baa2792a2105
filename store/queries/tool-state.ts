import type { JsonObject } from '../../contract/json.ts';
import type { Db } from '../driver.ts';
import type { StoredRunState } from '../types.ts';
import { optional, toIso, toNumber } from './values.ts';

/** A tool's persistent state (migration 18): version 0 and no updatedAt before its first write. */
export interface StoredToolState {
  toolId: string;
  state: JsonObject;
  version: number;
  updatedAt?: string;
}

/**
 * What a change of a tool's state decides, given the state as stored: the new state to write (the version
 * goes up by one), or undefined to write nothing.
 */
export type ToolStateChange = (current: StoredToolState) => JsonObject | undefined;

/**
 * The persistent state of tools (docs/state.md). The rules (limits, compare-and-set between runs) are the
 * caller's (tools/state.ts); here a change is applied atomically: the tool's row is locked from the read to
 * the write, so two runs committing at once apply their changes one after the other.
 */
export interface ToolStateQueries {
  get(toolId: string): Promise<StoredToolState>;
  /**
   * Reads the tool's state, locked until the transaction ends (one of its own unless called in one), and
   * writes what `change` returns. Answers the state as stored afterwards.
   */
  update(toolId: string, change: ToolStateChange): Promise<StoredToolState>;
  /** Forgets the tool's state and its version (the tool was deleted); false when it had none. */
  drop(toolId: string): Promise<boolean>;
  /** Writes what a run read and wrote of its state, and the run's warnings (Run.metadata). */
  recordRun(runId: string, state: StoredRunState | undefined, warnings: readonly string[]): Promise<void>;
  /** How many runs of the tool are running. */
  runningRuns(toolId: string): Promise<number>;
}

interface ToolStateRow {
  tool_id: string;
  state: JsonObject;
  version: number | string | bigint;
  updated_at: Date | string | null;
}

function fromRow(row: ToolStateRow): StoredToolState {
  const stored: StoredToolState = { toolId: row.tool_id, state: row.state, version: toNumber(row.version) };
  optional(stored, 'updatedAt', row.updated_at === null ? null : toIso(row.updated_at));
  return stored;
}

const COLUMNS = 'tool_id, state, version, updated_at';

export function bindToolStateQueries(db: Db): ToolStateQueries {
  const d = db.dialect;
  return {
    async get(toolId) {
      const { rows } = await db.query<ToolStateRow>(`SELECT ${COLUMNS} FROM tool_state WHERE tool_id = $1`, [
        toolId,
      ]);
      return rows[0] ? fromRow(rows[0]) : { toolId, state: {}, version: 0 };
    },

    update(toolId, change) {
      return db.transaction(async (tx) => {
        // The row exists before it is locked: two first writes of a tool then queue on one row rather than
        // both finding none.
        await tx.query('INSERT INTO tool_state (tool_id) VALUES ($1) ON CONFLICT (tool_id) DO NOTHING', [
          toolId,
        ]);
        const { rows } = await tx.query<ToolStateRow>(
          `SELECT ${COLUMNS} FROM tool_state WHERE tool_id = $1${d.forUpdate}`,
          [toolId],
        );
        const current = fromRow(rows[0] as ToolStateRow);
        const next = change(current);
        if (next === undefined) return current;
        const written = await tx.query<ToolStateRow>(
          `UPDATE tool_state SET state = ${d.typed('$2', 'jsonb')}, version = version + 1, updated_at = ${d.now}
            WHERE tool_id = $1 RETURNING ${COLUMNS}`,
          [toolId, JSON.stringify(next)],
        );
        return fromRow(written.rows[0] as ToolStateRow);
      });
    },

    async drop(toolId) {
      const { rowCount } = await db.query('DELETE FROM tool_state WHERE tool_id = $1', [toolId]);
      return rowCount > 0;
    },

    async recordRun(runId, state, warnings) {
      await db.query(
        `UPDATE runs SET state = ${d.typed('$2', 'jsonb')}, warnings = ${d.typed('$3', 'jsonb')} WHERE run_id = $1`,
        [runId, state ? JSON.stringify(state) : null, warnings.length > 0 ? JSON.stringify(warnings) : null],
      );
    },

    async runningRuns(toolId) {
      const { rows } = await db.query<{ n: number | string | bigint }>(
        `SELECT count(*) AS n FROM runs WHERE tool_id = $1 AND status = 'running'`,
        [toolId],
      );
      return toNumber(rows[0]?.n ?? 0);
    },
  };
}
