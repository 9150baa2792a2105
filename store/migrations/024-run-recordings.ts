import type { Migration } from './migration.ts';

export const runRecordings: Migration = {
  id: 24,
  name: 'run recordings',
  pg: `
      -- options.record: every exchange of a run's request steps, redacted (contract/api/recording.ts), written by
      -- the run's terminal write when it wins (store/queries/run-writes.ts). runs.recording is its summary for
      -- the Run view (exchanges, bytes, truncated), NULL for a run that recorded nothing. The exchanges are
      -- deleted with the run (ON DELETE CASCADE) and with its results by result retention (queries/retention.ts).
      ALTER TABLE runs ADD COLUMN recording jsonb;
      CREATE TABLE run_recordings (
        run_id    text COLLATE "C" PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        recording jsonb NOT NULL
      );
    `,
  sqlite: `
      ALTER TABLE runs ADD COLUMN recording JSON_TEXT;
      CREATE TABLE run_recordings (
        run_id    TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        recording JSON_TEXT NOT NULL
      );
    `,
};
