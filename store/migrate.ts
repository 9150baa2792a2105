import type { Db } from './driver.ts';
import type { Migration } from './migrations.ts';

/** 'kubeglue' in ASCII: the advisory lock every starter takes before looking at the schema. */
export const MIGRATION_LOCK_KEY = '7743203321999816037';

export interface MigrationReport {
  applied: number[];
  /** Ids recorded in the database that this code does not know (a newer version migrated it). */
  unknown: number[];
}

/**
 * Applies pending migrations in one transaction that holds a transaction-scoped advisory lock, so concurrent
 * starters wait for each other instead of racing; whoever comes second finds nothing left to do.
 */
export async function applyMigrations(
  db: Db,
  migrations: readonly Migration[],
  onProgress: (message: string) => void = () => {},
): Promise<MigrationReport> {
  assertAppendOnlyOrder(migrations);
  return db.transaction(async (tx) => {
    // SQLite: one process holds the database, and its write transaction already excludes every other writer.
    if (tx.dialect.sharedByProcesses) await tx.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    await tx.exec(`
      CREATE TABLE IF NOT EXISTS kubeglue_migrations (
        id         integer PRIMARY KEY,
        name       text NOT NULL,
        applied_at ${tx.dialect.timestampType} NOT NULL DEFAULT (${tx.dialect.now})
      )`);
    const { rows } = await tx.query<{ id: number }>('SELECT id FROM kubeglue_migrations ORDER BY id');
    const done = new Set(rows.map((row) => row.id));
    const known = new Set(migrations.map((migration) => migration.id));
    const applied: number[] = [];
    for (const migration of migrations) {
      if (done.has(migration.id)) continue;
      await tx.exec(migration[tx.dialect.name]);
      await tx.query('INSERT INTO kubeglue_migrations (id, name) VALUES ($1, $2)', [
        migration.id,
        migration.name,
      ]);
      applied.push(migration.id);
      onProgress(`store: applied migration ${migration.id} (${migration.name})`);
    }
    const unknown = [...done].filter((id) => !known.has(id));
    if (unknown.length > 0) {
      onProgress(`store: database has migrations this version does not know: ${unknown.join(', ')}`);
    }
    return { applied, unknown };
  });
}

function assertAppendOnlyOrder(migrations: readonly Migration[]): void {
  let previous = 0;
  for (const migration of migrations) {
    if (!Number.isInteger(migration.id) || migration.id <= previous) {
      throw new Error(`migration ids must be increasing integers; ${migration.id} follows ${previous}`);
    }
    previous = migration.id;
  }
}
