import type { JsonObject } from '../../contract/json.ts';
import type { Db } from '../driver.ts';
import { camelRow, toNumber } from './values.ts';

/**
 * Storage for the embedded resource server: objects plus an ordered change feed. The API-server rules
 * (conflicts, generation, finalizers, garbage collection) live in operator/resources/embedded.ts; this
 * module only persists what it is told, under the revision lock.
 */

export type ResourceEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * NOTIFY channel that carries, after every committed resource write, the newest revision and the kinds the
 * write changed: `<revision> <Kind>,<Kind>` (see resourceChangeOf).
 */
export const RESOURCE_CHANNEL = 'kubeglue_resources';

/** What a committed resource write changed, as its notification tells it. */
export interface ResourceChange {
  /** The newest revision the write committed. */
  revision: number;
  /** The kinds of the objects it wrote or deleted. */
  kinds: ReadonlySet<string>;
}

function resourceChangePayload(revision: number, kinds: Iterable<string>): string {
  return `${revision} ${[...kinds].join(',')}`;
}

/**
 * The change a RESOURCE_CHANNEL payload describes, or undefined when it does not say (`''` after a lost
 * notification connection, or a bare revision from an older version): then anything may have changed.
 */
export function resourceChangeOf(payload: string): ResourceChange | undefined {
  const match = /^(\d+) ([A-Za-z0-9,]*)$/.exec(payload);
  if (!match?.[1]) return undefined;
  return { revision: Number(match[1]), kinds: new Set(match[2] ? match[2].split(',') : []) };
}

export interface ResourceKey {
  kind: string;
  namespace: string;
  name: string;
}

export interface ResourceRecord extends ResourceKey {
  uid: string;
  resourceVersion: number;
  generation: number;
  /** uids from metadata.ownerReferences, indexed for garbage collection. */
  ownerUids: string[];
  /** The whole object as served, metadata.resourceVersion included. */
  object: JsonObject;
}

export interface ResourceEvent {
  revision: number;
  type: ResourceEventType;
  object: JsonObject;
}

export interface ResourceEventPage {
  events: ResourceEvent[];
  /** The newest committed revision when the page was read. */
  revision: number;
  /** Events at or below this revision have been deleted. */
  compactedRevision: number;
}

export interface ResourceList {
  records: ResourceRecord[];
  /** The revision the list is a snapshot of; watch from it to miss nothing. */
  revision: number;
}

interface RecordRow {
  kind: string;
  namespace: string;
  name: string;
  uid: string;
  resource_version: number | string | bigint;
  generation: number | string | bigint;
  owner_uids: string[];
  object: JsonObject;
}

const RECORD_COLUMNS = 'kind, namespace, name, uid, resource_version, generation, owner_uids, object';

function recordFromRow({ resource_version, generation, ...row }: RecordRow): ResourceRecord {
  return { ...camelRow(row), resourceVersion: toNumber(resource_version), generation: toNumber(generation) };
}

export async function getResource(db: Db, key: ResourceKey): Promise<ResourceRecord | undefined> {
  const { rows } = await db.query<RecordRow>(
    `SELECT ${RECORD_COLUMNS} FROM resources WHERE kind = $1 AND namespace = $2 AND name = $3`,
    [key.kind, key.namespace, key.name],
  );
  return rows[0] ? recordFromRow(rows[0]) : undefined;
}

/** Objects of one kind in one namespace whose labels include every given label, with the revision read. */
export async function listResources(
  db: Db,
  kind: string,
  namespace: string,
  labels?: Record<string, string>,
): Promise<ResourceList> {
  const params: unknown[] = [kind, namespace];
  let labelCondition = '';
  if (labels && Object.keys(labels).length > 0) {
    params.push(JSON.stringify(labels));
    labelCondition = `AND ${db.dialect.objectContains(db.dialect.jsonPath('r.object', 'metadata', 'labels'), '$3')}`;
  }
  // One statement, so the revision and the objects come from the same snapshot.
  const { rows } = await db.query<{ revision: number | string | bigint } & Partial<RecordRow>>(
    `SELECT rr.revision, r.kind, r.namespace, r.name, r.uid, r.resource_version, r.generation, r.owner_uids, r.object
       FROM resource_revision rr
       LEFT JOIN resources r ON r.kind = $1 AND r.namespace = $2 ${labelCondition}
      ORDER BY r.name`,
    params,
  );
  const revision = toNumber(rows[0]?.revision ?? 0);
  const records = rows
    .filter((row): row is RecordRow & { revision: number } => row.uid != null)
    .map(({ revision: _, ...row }) => recordFromRow(row));
  return { records, revision };
}

/** Up to limit events of one kind and namespace after revision `after`, oldest first. */
export async function resourceEventsAfter(
  db: Db,
  kind: string,
  namespace: string,
  after: number,
  limit: number,
): Promise<ResourceEventPage> {
  const { rows } = await db.query<{
    revision: number | string | bigint;
    compacted_revision: number | string | bigint;
    seq: number | string | bigint | null;
    type: ResourceEventType | null;
    object: JsonObject | null;
  }>(
    `SELECT rr.revision, rr.compacted_revision, e.seq, e.type, e.object
       FROM resource_revision rr
       LEFT JOIN (
         SELECT seq, type, object FROM resource_events
          WHERE kind = $1 AND namespace = $2 AND seq > $3
          ORDER BY seq LIMIT $4
       ) e ON true
      ORDER BY e.seq`,
    [kind, namespace, after, limit],
  );
  const first = rows[0];
  const events: ResourceEvent[] = [];
  for (const row of rows) {
    if (row.seq === null || row.type === null || row.object === null) continue;
    events.push({ revision: toNumber(row.seq), type: row.type, object: row.object });
  }
  return {
    events,
    revision: toNumber(first?.revision ?? 0),
    compactedRevision: toNumber(first?.compacted_revision ?? 0),
  };
}

/** What a resource write transaction may do. Every change is recorded in the feed at its own revision. */
export interface ResourceWriter {
  get(key: ResourceKey): Promise<ResourceRecord | undefined>;
  /** Objects in namespace with an ownerReference to ownerUid. */
  dependents(namespace: string, ownerUid: string): Promise<ResourceRecord[]>;
  /** Which of these uids belong to existing objects. */
  existingUids(uids: readonly string[]): Promise<Set<string>>;
  /** Allocates the next revision; the caller stamps it into the object it then puts or removes. */
  nextRevision(): Promise<number>;
  put(record: ResourceRecord, type: 'ADDED' | 'MODIFIED'): Promise<void>;
  /** Deletes the object; record.object is its final state, which the DELETED event carries. */
  remove(record: ResourceRecord): Promise<void>;
}

/**
 * Runs fn in a transaction that holds the revision row lock from the start, so resource writes are
 * serialised: reads inside fn are current, and revisions commit in order. Listeners on RESOURCE_CHANNEL are
 * notified at commit when fn wrote anything.
 */
export async function writeResources<T>(db: Db, fn: (writer: ResourceWriter) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query(`SELECT revision FROM resource_revision${tx.dialect.forUpdate}`);
    let lastRevision = 0;
    const kinds = new Set<string>();
    const writer: ResourceWriter = {
      get: (key) => getResource(tx, key),
      dependents: async (namespace, ownerUid) => {
        const { rows } = await tx.query<RecordRow>(
          `SELECT ${RECORD_COLUMNS} FROM resources
            WHERE namespace = $1 AND ${tx.dialect.arrayContains('owner_uids', tx.dialect.typed('$2', 'text'))}
            ORDER BY kind, name`,
          [namespace, ownerUid],
        );
        return rows.map(recordFromRow);
      },
      existingUids: async (uids) => {
        if (uids.length === 0) return new Set();
        const { rows } = await tx.query<{ uid: string }>(
          `SELECT uid FROM resources WHERE ${tx.dialect.inArray('uid', '$1')}`,
          [[...uids]],
        );
        return new Set(rows.map((row) => row.uid));
      },
      nextRevision: async () => {
        const { rows } = await tx.query<{ revision: number | string | bigint }>(
          'UPDATE resource_revision SET revision = revision + 1 RETURNING revision',
        );
        lastRevision = toNumber(rows[0]?.revision ?? 0);
        return lastRevision;
      },
      put: async (record, type) => {
        kinds.add(record.kind);
        const d = tx.dialect;
        const object = JSON.stringify(record.object);
        await tx.query(
          `INSERT INTO resource_events (seq, kind, namespace, name, type, object)
           VALUES ($4, $1, $2, $3, $5, ${d.typed('$6', 'jsonb')})`,
          [record.kind, record.namespace, record.name, record.resourceVersion, type, object],
        );
        await tx.query(
          `INSERT INTO resources (kind, namespace, name, uid, resource_version, generation, owner_uids, object)
           VALUES ($1, $2, $3, $4, $5, $6, ${d.textArray('$8')}, ${d.typed('$7', 'jsonb')})
           ON CONFLICT (kind, namespace, name) DO UPDATE
             SET uid = EXCLUDED.uid, resource_version = EXCLUDED.resource_version,
                 generation = EXCLUDED.generation, owner_uids = EXCLUDED.owner_uids, object = EXCLUDED.object`,
          [
            record.kind,
            record.namespace,
            record.name,
            record.uid,
            record.resourceVersion,
            record.generation,
            object,
            record.ownerUids,
          ],
        );
      },
      remove: async (record) => {
        kinds.add(record.kind);
        await tx.query(
          `INSERT INTO resource_events (seq, kind, namespace, name, type, object)
           VALUES ($4, $1, $2, $3, 'DELETED', ${tx.dialect.typed('$5', 'jsonb')})`,
          [record.kind, record.namespace, record.name, record.resourceVersion, JSON.stringify(record.object)],
        );
        await tx.query('DELETE FROM resources WHERE kind = $1 AND namespace = $2 AND name = $3', [
          record.kind,
          record.namespace,
          record.name,
        ]);
      },
    };
    const result = await fn(writer);
    if (lastRevision > 0) await tx.notify(RESOURCE_CHANNEL, resourceChangePayload(lastRevision, kinds));
    return result;
  });
}

/**
 * Deletes feed events older than the newest keepRevisions revisions. Watches from a revision below the
 * compacted one answer 410 Gone, like a compacted etcd. Returns the compacted revision.
 */
export async function compactResourceEvents(db: Db, keepRevisions: number): Promise<number> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{
      revision: number | string | bigint;
      compacted_revision: number | string | bigint;
    }>(`SELECT revision, compacted_revision FROM resource_revision${tx.dialect.forUpdate}`);
    const revision = toNumber(rows[0]?.revision ?? 0);
    const compacted = toNumber(rows[0]?.compacted_revision ?? 0);
    const target = revision - Math.max(0, keepRevisions);
    if (target <= compacted) return compacted;
    await tx.query('DELETE FROM resource_events WHERE seq <= $1', [target]);
    await tx.query('UPDATE resource_revision SET compacted_revision = $1', [target]);
    return target;
  });
}
