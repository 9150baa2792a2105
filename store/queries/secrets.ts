import type { Db } from '../driver.ts';
import { toBytes } from './values.ts';

/** Secrets of the embedded deployment, as opaque bytes: the caller encrypts and decrypts. */

export async function putSecret(db: Db, namespace: string, name: string, data: Uint8Array): Promise<void> {
  await db.query(
    `INSERT INTO embedded_secrets (namespace, name, data) VALUES ($1, $2, $3)
     ON CONFLICT (namespace, name) DO UPDATE SET data = EXCLUDED.data, updated_at = ${db.dialect.now}`,
    [namespace, name, data],
  );
}

export async function getSecret(db: Db, namespace: string, name: string): Promise<Uint8Array | undefined> {
  const { rows } = await db.query<{ data: Uint8Array }>(
    'SELECT data FROM embedded_secrets WHERE namespace = $1 AND name = $2',
    [namespace, name],
  );
  return rows[0] ? toBytes(rows[0].data) : undefined;
}

/** False when there was no such secret. */
export async function deleteSecret(db: Db, namespace: string, name: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM embedded_secrets WHERE namespace = $1 AND name = $2', [
    namespace,
    name,
  ]);
  return rowCount > 0;
}
