import type { Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const systemBudgets: Migration = {
  id: 25,
  name: 'rate budgets of systems: the shared bucket and the requests in flight',
  pg: `
      -- One row per System variant with a rateLimit (budget_key: its resource name), shared by every process
      -- on the database. Times are epoch ms (tat_us: µs) of the processes' clocks. tat_us: the bucket's
      -- theoretical arrival time (GCRA: a request may go at tat_us - (burst - 1) / rate, and moves it one
      -- interval on); paused_until_ms: the system answered 429/503 with Retry-After, nothing goes before it.
      -- The counters are what the dashboard shows of the budget's use.
      CREATE TABLE system_budgets (
        budget_key text PRIMARY KEY,
        tat_us bigint NOT NULL DEFAULT 0,
        paused_until_ms bigint NOT NULL DEFAULT 0,
        requests bigint NOT NULL DEFAULT 0,
        waits bigint NOT NULL DEFAULT 0,
        wait_ms bigint NOT NULL DEFAULT 0,
        throttled bigint NOT NULL DEFAULT 0,
        last_request_ms bigint NOT NULL DEFAULT 0
      );
      -- A request in flight to a system with maxConcurrent: inserted by its take, deleted by its release, and
      -- no longer counted after expires_at_ms (its run's deadline), so a process that died leaks nothing.
      CREATE TABLE system_budget_leases (
        budget_key text NOT NULL,
        lease_id text NOT NULL,
        expires_at_ms bigint NOT NULL,
        PRIMARY KEY (budget_key, lease_id)
      );
    `,
  sqlite: `
      CREATE TABLE system_budgets (
        budget_key TEXT PRIMARY KEY,
        tat_us INTEGER NOT NULL DEFAULT 0,
        paused_until_ms INTEGER NOT NULL DEFAULT 0,
        requests INTEGER NOT NULL DEFAULT 0,
        waits INTEGER NOT NULL DEFAULT 0,
        wait_ms INTEGER NOT NULL DEFAULT 0,
        throttled INTEGER NOT NULL DEFAULT 0,
        last_request_ms INTEGER NOT NULL DEFAULT 0
      );
      CREATE TABLE system_budget_leases (
        budget_key TEXT NOT NULL,
        lease_id TEXT NOT NULL,
        expires_at_ms INTEGER NOT NULL,
        PRIMARY KEY (budget_key, lease_id)
      );
    `,
};
