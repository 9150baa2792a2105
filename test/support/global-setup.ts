import type { TestProject } from 'vitest/node';
import { startTestPostgres } from './postgres.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of the run's throwaway PostgreSQL server; make your own database with createTestDatabase. */
    databaseUrl: string;
  }
}

/** One PostgreSQL server for the whole test run. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startTestPostgres();
  project.provide('databaseUrl', server.url);
  return () => server.stop();
}
