import { iso, type Migration, NOW } from './migration.ts';

/** Shipped: its SQL never changes, its indentation included (store/migrations.ts). */
export const scheduleTickClaims: Migration = {
  id: 17,
  name: 'schedule tick claims and the schedule of a run',
  pg: `
      -- The schedule whose tick started the run (GET /v1/runs/{id} shows it as scheduleId); the running runs
      -- of a schedule are what its concurrency policy looks at.
      ALTER TABLE runs ADD COLUMN schedule_id text;
      CREATE INDEX runs_schedule_running_idx ON runs (schedule_id)
        WHERE schedule_id IS NOT NULL AND status = 'running';
      -- One row per tick a schedule acted on, whichever process did: inserting it is the claim, so exactly
      -- one process starts (or skips) a tick across replicas and restarts. The newest row of a schedule is
      -- where its next evaluation starts; older rows are pruned as new ones are claimed.
      CREATE TABLE schedule_ticks (
        schedule_uid text NOT NULL,
        tick_at      timestamptz NOT NULL,
        namespace    text NOT NULL,
        schedule_id  text NOT NULL,
        outcome      text NOT NULL CHECK (outcome IN ('started', 'skipped', 'missed')),
        reason       text,
        run_id       text,
        attempt      integer NOT NULL DEFAULT 1 CHECK (attempt >= 1),
        claimed_by   text NOT NULL,
        claimed_at   timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (schedule_uid, tick_at),
        CONSTRAINT schedule_ticks_run_iff_started CHECK ((outcome = 'started') = (run_id IS NOT NULL))
      );
    `,
  sqlite: `
      ALTER TABLE runs ADD COLUMN schedule_id TEXT;
      CREATE INDEX runs_schedule_running_idx ON runs (schedule_id)
        WHERE schedule_id IS NOT NULL AND status = 'running';
      CREATE TABLE schedule_ticks (
        schedule_uid TEXT NOT NULL,
        tick_at      TEXT NOT NULL ${iso('tick_at')},
        namespace    TEXT NOT NULL,
        schedule_id  TEXT NOT NULL,
        outcome      TEXT NOT NULL CHECK (outcome IN ('started', 'skipped', 'missed')),
        reason       TEXT,
        run_id       TEXT,
        attempt      INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1),
        claimed_by   TEXT NOT NULL,
        claimed_at   TEXT NOT NULL DEFAULT ${NOW} ${iso('claimed_at')},
        PRIMARY KEY (schedule_uid, tick_at),
        CONSTRAINT schedule_ticks_run_iff_started CHECK ((outcome = 'started') = (run_id IS NOT NULL))
      );
    `,
};
