import type { Db } from '../driver.ts';
import { camelRow, toBytes, toIso } from './values.ts';

/**
 * System documentation (migrations 9 and 20): one row per system variant. Plain SQL with ISO-string timestamps and
 * JSON as text, so the statements run unchanged on SQLite. The caller encodes and decodes the JSON.
 */

export type DocumentationStatus = 'pending' | 'ready' | 'failed';

export interface DocumentationKey {
  systemId: string;
  environment: string;
}

export interface DocumentationRequest extends DocumentationKey {
  requestId: string;
  source: string;
  /** JSON text of the keywords, or undefined. */
  keywords?: string | undefined;
  upload?: { bytes: Uint8Array; contentType?: string | undefined } | undefined;
  requestedAt: string;
}

export interface DocumentationState extends DocumentationKey {
  requestId: string;
  status: DocumentationStatus;
  source: string;
  requestedAt: string;
  fetchedAt?: string;
  error?: string;
  /** JSON text. */
  apiKeyPlacement?: string;
  /** Attempts claimed for this request (the one under way included). */
  attempts: number;
  /** A claim's lease, or the earliest next attempt while retryAt is set. */
  leaseUntil?: string;
  /** Pending after a failed attempt: when the next one is due. */
  retryAt?: string;
}

export interface ClaimedDocumentation extends DocumentationState {
  keywords?: string;
  upload?: Uint8Array;
  uploadType?: string;
}

interface StateRow {
  system_id: string;
  environment: string;
  request_id: string;
  status: DocumentationStatus;
  source: string;
  requested_at: Date | string;
  fetched_at: Date | string | null;
  error: string | null;
  api_key_placement: string | null;
  attempts: number | string;
  lease_until: Date | string | null;
  retry_at: Date | string | null;
}

const STATE_COLUMNS =
  'system_id, environment, request_id, status, source, requested_at, fetched_at, error, api_key_placement, ' +
  'attempts, lease_until, retry_at';

function toState({
  requested_at,
  fetched_at,
  error,
  api_key_placement,
  attempts,
  lease_until,
  retry_at,
  ...row
}: StateRow): DocumentationState {
  return {
    ...camelRow(row),
    requestedAt: toIso(requested_at),
    ...(fetched_at !== null ? { fetchedAt: toIso(fetched_at) } : {}),
    ...(error !== null ? { error } : {}),
    ...(api_key_placement !== null ? { apiKeyPlacement: api_key_placement } : {}),
    attempts: Number(attempts),
    ...(lease_until !== null ? { leaseUntil: toIso(lease_until) } : {}),
    ...(retry_at !== null ? { retryAt: toIso(retry_at) } : {}),
  };
}

/** A new request replaces any earlier one (pending or not); the kept summary stays until a new one is ready. */
export async function requestDocumentation(db: Db, request: DocumentationRequest): Promise<void> {
  await db.query(
    `INSERT INTO system_documentation
       (system_id, environment, request_id, status, source, keywords, upload, upload_type, requested_at,
        lease_until, attempts, error)
     VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, NULL, 0, NULL)
     ON CONFLICT (system_id, environment) DO UPDATE SET
       request_id = EXCLUDED.request_id, status = 'pending', source = EXCLUDED.source,
       keywords = EXCLUDED.keywords, upload = EXCLUDED.upload, upload_type = EXCLUDED.upload_type,
       requested_at = EXCLUDED.requested_at, lease_until = NULL, attempts = 0, error = NULL, retry_at = NULL`,
    [
      request.systemId,
      request.environment,
      request.requestId,
      request.source,
      request.keywords ?? null,
      request.upload?.bytes ?? null,
      request.upload?.contentType ?? null,
      request.requestedAt,
    ],
  );
}

/**
 * Takes the pending request for processing until `leaseUntil`, when it is still `requestId` and nobody holds an unexpired lease on it; counts the attempt.
 */
export async function claimDocumentation(
  db: Db,
  key: DocumentationKey,
  opts: { requestId: string; now: string; leaseUntil: string },
): Promise<ClaimedDocumentation | undefined> {
  const { rows } = await db.query<
    StateRow & {
      keywords: string | null;
      upload: Uint8Array | null;
      upload_type: string | null;
    }
  >(
    `UPDATE system_documentation SET lease_until = $4, attempts = attempts + 1, retry_at = NULL
      WHERE system_id = $1 AND environment = $2 AND status = 'pending'
        AND request_id = $3
        AND (lease_until IS NULL OR lease_until < $5)
      RETURNING ${STATE_COLUMNS}, keywords, upload, upload_type`,
    [key.systemId, key.environment, opts.requestId, opts.leaseUntil, opts.now],
  );
  const row = rows[0];
  if (!row) return undefined;
  const { keywords, upload, upload_type, ...state } = row;
  return {
    ...toState(state),
    ...(keywords !== null ? { keywords } : {}),
    ...(upload !== null ? { upload: toBytes(upload) } : {}),
    ...(upload_type !== null ? { uploadType: upload_type } : {}),
  };
}

/** Gives a claimed request back (a clean shutdown): the attempt does not count, the next sweep takes it. */
export async function releaseDocumentation(db: Db, key: DocumentationKey, requestId: string): Promise<void> {
  await db.query(
    `UPDATE system_documentation SET lease_until = NULL, attempts = attempts - 1
      WHERE system_id = $1 AND environment = $2 AND request_id = $3 AND status = 'pending' AND attempts > 0`,
    [key.systemId, key.environment, requestId],
  );
}

/** Pending requests nobody holds a lease on (never claimed, or their processor died). */
export async function unclaimedDocumentation(
  db: Db,
  now: string,
  limit: number,
): Promise<Array<DocumentationKey & { requestId: string }>> {
  const { rows } = await db.query<{ system_id: string; environment: string; request_id: string }>(
    `SELECT system_id, environment, request_id FROM system_documentation
      WHERE status = 'pending' AND (lease_until IS NULL OR lease_until < $1)
      ORDER BY requested_at LIMIT $2`,
    [now, limit],
  );
  return rows.map((row) => ({
    systemId: row.system_id,
    environment: row.environment,
    requestId: row.request_id,
  }));
}

/** Stores the result of request `requestId`; false when a newer request replaced it meanwhile. */
export async function completeDocumentation(
  db: Db,
  key: DocumentationKey,
  requestId: string,
  result: { summary: string; apiKeyPlacement?: string | undefined; fetchedAt: string },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE system_documentation
        SET status = 'ready', summary = $4, api_key_placement = $5, fetched_at = $6, error = NULL,
            upload = NULL, lease_until = NULL, retry_at = NULL
      WHERE system_id = $1 AND environment = $2 AND request_id = $3`,
    [
      key.systemId,
      key.environment,
      requestId,
      result.summary,
      result.apiKeyPlacement ?? null,
      result.fetchedAt,
    ],
  );
  return rowCount > 0;
}

/**
 * A failed attempt that will be retried: the request stays pending with the error shown, and nobody claims it
 * before `notBefore` (the lease column doubles as the earliest next attempt).
 */
export async function retryDocumentation(
  db: Db,
  key: DocumentationKey,
  requestId: string,
  retry: { error: string; notBefore: string },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE system_documentation SET error = $4, lease_until = $5, retry_at = $5
      WHERE system_id = $1 AND environment = $2 AND request_id = $3 AND status = 'pending'`,
    [key.systemId, key.environment, requestId, retry.error, retry.notBefore],
  );
  return rowCount > 0;
}

/** Marks request `requestId` failed (the kept summary and placement of an earlier success stay). */
export async function failDocumentation(
  db: Db,
  key: DocumentationKey,
  requestId: string,
  error: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE system_documentation
        SET status = 'failed', error = $4, upload = NULL, lease_until = NULL, retry_at = NULL
      WHERE system_id = $1 AND environment = $2 AND request_id = $3`,
    [key.systemId, key.environment, requestId, error],
  );
  return rowCount > 0;
}

export async function getDocumentationState(
  db: Db,
  key: DocumentationKey,
): Promise<DocumentationState | undefined> {
  const { rows } = await db.query<StateRow>(
    `SELECT ${STATE_COLUMNS} FROM system_documentation WHERE system_id = $1 AND environment = $2`,
    [key.systemId, key.environment],
  );
  return rows[0] ? toState(rows[0]) : undefined;
}

/** Every variant's state (no summaries): the system list shows them. */
export async function listDocumentationStates(db: Db): Promise<DocumentationState[]> {
  const { rows } = await db.query<StateRow>(`SELECT ${STATE_COLUMNS} FROM system_documentation`);
  return rows.map(toState);
}

/** The kept summary (JSON text), whatever the status of a later request. */
export async function getDocumentationSummary(db: Db, key: DocumentationKey): Promise<string | undefined> {
  const { rows } = await db.query<{ summary: string | null }>(
    'SELECT summary FROM system_documentation WHERE system_id = $1 AND environment = $2',
    [key.systemId, key.environment],
  );
  return rows[0]?.summary ?? undefined;
}

export async function deleteDocumentation(db: Db, key: DocumentationKey): Promise<void> {
  await db.query('DELETE FROM system_documentation WHERE system_id = $1 AND environment = $2', [
    key.systemId,
    key.environment,
  ]);
}

export interface DocumentationStore {
  request(request: DocumentationRequest): Promise<void>;
  claim(
    key: DocumentationKey,
    opts: { requestId: string; now: string; leaseUntil: string },
  ): Promise<ClaimedDocumentation | undefined>;
  release(key: DocumentationKey, requestId: string): Promise<void>;
  unclaimed(now: string, limit: number): Promise<Array<DocumentationKey & { requestId: string }>>;
  complete(
    key: DocumentationKey,
    requestId: string,
    result: { summary: string; apiKeyPlacement?: string | undefined; fetchedAt: string },
  ): Promise<boolean>;
  fail(key: DocumentationKey, requestId: string, error: string): Promise<boolean>;
  retry(
    key: DocumentationKey,
    requestId: string,
    retry: { error: string; notBefore: string },
  ): Promise<boolean>;
  state(key: DocumentationKey): Promise<DocumentationState | undefined>;
  states(): Promise<DocumentationState[]>;
  summary(key: DocumentationKey): Promise<string | undefined>;
  delete(key: DocumentationKey): Promise<void>;
}

export function documentationQueries(db: Db): DocumentationStore {
  return {
    request: (request) => requestDocumentation(db, request),
    claim: (key, opts) => claimDocumentation(db, key, opts),
    release: (key, requestId) => releaseDocumentation(db, key, requestId),
    unclaimed: (now, limit) => unclaimedDocumentation(db, now, limit),
    complete: (key, requestId, result) => completeDocumentation(db, key, requestId, result),
    fail: (key, requestId, error) => failDocumentation(db, key, requestId, error),
    retry: (key, requestId, retry) => retryDocumentation(db, key, requestId, retry),
    state: (key) => getDocumentationState(db, key),
    states: () => listDocumentationStates(db),
    summary: (key) => getDocumentationSummary(db, key),
    delete: (key) => deleteDocumentation(db, key),
  };
}
