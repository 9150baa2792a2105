import { iso, type Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const toolState: Migration = {
  id: 18,
  name: 'persistent tool state',
  pg: `
      -- Each tool's persistent state (docs/state.md): one JSON object, written by the runs that succeed
      -- (per-key compare-and-set, tools/state.ts) and by PUT/DELETE /v1/tools/{id}/state; version counts the
      -- writes. Only here, never in a resource. Deleting the tool deletes its row.
      CREATE TABLE tool_state (
        tool_id    text PRIMARY KEY,
        state      jsonb NOT NULL DEFAULT '{}',
        version    bigint NOT NULL DEFAULT 0,
        updated_at timestamptz
      );
      -- What a run read and wrote of its tool's state ({versionRead, versionWritten, fixture}), and what it did
      -- not do as written without failing (Run.metadata.state and .warnings).
      ALTER TABLE runs ADD COLUMN state jsonb;
      ALTER TABLE runs ADD COLUMN warnings jsonb;
    `,
  sqlite: `
      CREATE TABLE tool_state (
        tool_id    TEXT PRIMARY KEY,
        state      JSON_TEXT NOT NULL DEFAULT '{}',
        version    INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT ${iso('updated_at')}
      );
      ALTER TABLE runs ADD COLUMN state JSON_TEXT;
      ALTER TABLE runs ADD COLUMN warnings JSON_TEXT;
    `,
};
