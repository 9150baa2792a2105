/**
 * Run ids the server chooses: UUIDv7 (RFC 9562), a random UUID whose first 48 bits are the Unix time in
 * milliseconds. Ids made later sort later, so every index keyed by run id (the runs' primary key, step
 * results, results; on Postgres and SQLite) grows at its end instead of at a random page: a run's writes
 * dirty a few pages shared with the runs written beside it, not three random pages of their own.
 */
import { randomUUID } from 'node:crypto';

/** A new UUIDv7: randomUUID's 74 random bits (drawn from Node's cached entropy) behind the time. */
export function newRunId(now = Date.now()): string {
  const time = now.toString(16).padStart(12, '0');
  // v4 layout xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx: keep its random bits and variant, set version 7.
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${randomUUID().slice(15)}`;
}
