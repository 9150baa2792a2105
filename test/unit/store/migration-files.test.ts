/**
 * Each migration is a file of store/migrations/ named after its id (001-….ts); the schema is the list in
 * store/migrations.ts. A file left out of the list would never run, and one listed out of place would run
 * in the wrong order on a new database.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../../store/index.ts';

const FOLDER = join(import.meta.dirname, '..', '..', '..', 'store', 'migrations');
const files = readdirSync(FOLDER)
  .filter((name) => /^\d{3}-.+\.ts$/.test(name))
  .sort();

describe('the migration files', () => {
  it('are the migrations the store applies, in the order of their file names', async () => {
    const declared = [];
    for (const file of files) {
      const exported = Object.values(await import(join(FOLDER, file)));
      expect(exported, `${file} exports one migration`).toHaveLength(1);
      declared.push(exported[0]);
    }
    expect(MIGRATIONS).toEqual(declared);
  });

  it('are each named after the id of the migration they hold', async () => {
    for (const file of files) {
      const [migration] = Object.values(await import(join(FOLDER, file))) as { id: number }[];
      expect(migration?.id, file).toBe(Number(file.slice(0, 3)));
    }
  });
});
