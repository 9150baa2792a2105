import type { Dialect } from '../dialect.ts';
import type { Db } from '../driver.ts';
import { toBytes } from './values.ts';

/**
 * Runtime credentials of accepted async runs (run_credentials), as opaque sealed bytes keyed by the exact
 * run id: the caller seals and opens (runs/runtime-credentials.ts). They are written by the run's insert
 * (run-writes.ts) and removed once the run ran, was cancelled, or ended any other way.
 */

const CREDENTIAL_RECORD_TYPES = 'run_id text, sealed text';

/** The JSON record of one run's sealed credentials (bytes travel as text in JSON: dialect.bytesToText). */
export function credentialRecord(d: Dialect, runId: string, sealed: Uint8Array): object {
  return { run_id: runId, sealed: d.bytesToText(sealed) };
}

/** Writes the records of the runs in `owners` (a row source with a run_id column), and no others. */
export function credentialsInsertSql(d: Dialect, recordsParam: string, owners: string): string {
  return `INSERT INTO run_credentials (run_id, sealed)
      SELECT c.run_id, ${d.bytesFromText('c.sealed')}
        FROM ${d.records(recordsParam, 'c', CREDENTIAL_RECORD_TYPES)}
        JOIN ${owners} ON owner.run_id = c.run_id
       WHERE true
      ON CONFLICT (run_id) DO NOTHING`;
}

export async function getRunCredentials(db: Db, runId: string): Promise<Uint8Array | undefined> {
  const { rows } = await db.query<{ sealed: Uint8Array }>(
    'SELECT sealed FROM run_credentials WHERE run_id = $1',
    [runId],
  );
  return rows[0] ? toBytes(rows[0].sealed) : undefined;
}

/** False when the run had none (left). */
export async function deleteRunCredentials(db: Db, runId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM run_credentials WHERE run_id = $1', [runId]);
  return rowCount > 0;
}

/**
 * Removes the credentials of runs that are no longer running (a crash between the terminal write and the
 * removal, a recovery, a cancel by another process); returns how many.
 */
export async function pruneRunCredentials(db: Db): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM run_credentials
      WHERE EXISTS (SELECT 1 FROM runs r WHERE r.run_id = run_credentials.run_id AND r.status <> 'running')`,
  );
  return rowCount;
}
