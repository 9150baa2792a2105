import type { Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const runToolRestriction: Migration = {
  id: 5,
  name: 'runs keep the tool restriction of the key that started them',
  pg: `
      -- Checked again when a completed run chains to another tool, and inherited by the chained run, so a key
      -- limited to some tools cannot reach others through chains.
      ALTER TABLE runs ADD COLUMN allowed_tool_ids text[];
      COMMENT ON COLUMN runs.allowed_tool_ids IS
        'tools the API key that started the run (or its chain) may use; NULL = every tool';
      -- Runs that may still chain (running, or a chain not delivered yet) take the restriction of their key:
      -- user_id is the id of the key that started the run, also for chained runs.
      UPDATE runs r SET allowed_tool_ids = k.tool_ids
        FROM api_keys k
       WHERE k.id = r.user_id AND k.tool_ids IS NOT NULL
         AND (r.status = 'running'
              OR r.run_id IN (SELECT o.run_id FROM outbox o WHERE o.kind = 'chain' AND o.done_at IS NULL));
    `,
  sqlite: `
      -- tools the API key that started the run (or its chain) may use; NULL = every tool
      ALTER TABLE runs ADD COLUMN allowed_tool_ids TEXT_ARRAY;
      UPDATE runs SET allowed_tool_ids = k.tool_ids
        FROM api_keys k
       WHERE k.id = runs.user_id AND k.tool_ids IS NOT NULL
         AND (runs.status = 'running'
              OR runs.run_id IN (SELECT o.run_id FROM outbox o WHERE o.kind = 'chain' AND o.done_at IS NULL));
    `,
};
