import { access } from 'node:fs/promises';
import { join } from 'node:path';

/** The embedded store's database file inside the data dir (KUBEGLUE_DATA_DIR); its WAL lives next to it. */
export const EMBEDDED_STORE_FILE = 'kubeglue.sqlite';

export function embeddedStorePath(dataDir: string): string {
  return join(dataDir, EMBEDDED_STORE_FILE);
}

/**
 * Earlier versions kept the embedded store in PGlite, whose Postgres data directory was the data dir itself
 * (PG_VERSION marks one). It is not converted: the SQLite store starts empty next to it.
 */
export async function hasPgliteData(dataDir: string): Promise<boolean> {
  try {
    await access(join(dataDir, 'PG_VERSION'));
    return true;
  } catch {
    return false;
  }
}

export function pgliteNotConvertedMessage(dataDir: string): string {
  return (
    `store: ${dataDir} holds a PGlite store of an earlier kubeglue version; it is NOT converted. The embedded ` +
    `store is now ${embeddedStorePath(dataDir)} (SQLite) and starts without the old runs, API keys, tools, ` +
    `systems and secrets: recreate what you need through the API. Once the old data is not needed, delete ` +
    `the PGlite files (PG_VERSION, base/, global/, pg_*/, postgresql*.conf) from ${dataDir}.`
  );
}
