import pg from 'pg';
import { inject } from 'vitest';
import { useStarted } from './fixture.ts';
import { createTestDatabase, type TestDatabase } from './postgres.ts';

/**
 * A fresh database on the run's Postgres for the tests of the enclosing block, dropped after them, with a
 * client connected as its owner (for setting tables up and looking at rows).
 */
export function useTestDatabase(): TestDatabase & { client: pg.Client } {
  return useStarted(
    async () => {
      const database = await createTestDatabase(inject('databaseUrl'));
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      return { ...database, client };
    },
    async ({ client, drop }) => {
      await client.end();
      await drop();
    },
  );
}
