import { iso, type Migration } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const documentationRetry: Migration = {
  id: 20,
  name: 'system documentation: when a failed attempt is retried',
  pg: `
      -- Set while a pending request waits for its next attempt after a failed one (lease_until holds the same
      -- time, as the earliest claim); cleared by the claim. So the API can tell an attempt running now
      -- (lease_until ahead, retry_at null) from one waiting (GET /v1/systems shows processing and retryAt).
      ALTER TABLE system_documentation ADD COLUMN retry_at timestamptz;
    `,
  sqlite: `
      ALTER TABLE system_documentation ADD COLUMN retry_at TEXT ${iso('retry_at')};
    `,
};
