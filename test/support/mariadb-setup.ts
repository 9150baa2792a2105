import type { TestProject } from 'vitest/node';
import { type MariaDbServer, mariadbMissing, startTestMariaDb } from './mariadb.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's throwaway MariaDB (mariadb.ts), or null when its binaries are missing (not under CI). */
    mariadb: MariaDbServer | null;
  }
}

/** One MariaDB server for the whole run, beside global-setup.ts's Postgres; test files share it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const missing = mariadbMissing();
  if (missing) {
    console.warn(`MariaDB tests skipped: ${missing}`);
    project.provide('mariadb', null);
    return async () => {};
  }
  const server = await startTestMariaDb();
  const { stop, ...address } = server;
  project.provide('mariadb', address);
  return stop;
}
