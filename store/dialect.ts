/**
 * The SQL that differs between the two backends, in one place. Queries are written once against these
 * fragments; the schema differences live in migrations.ts (each entry has a Postgres and a SQLite text).
 *
 * SQLite representations (the SQLite driver converts parameters and decodes columns to match Postgres):
 * - timestamps are TEXT in one fixed ISO-8601 UTC format with milliseconds (`2026-03-01T10:00:00.000Z`),
 *   so comparing the text orders them like time; every timestamp written goes through `timestamp()` or `now`;
 * - jsonb columns are TEXT holding JSON (declared type JSON_TEXT), text[] columns JSON arrays (TEXT_ARRAY),
 *   booleans 0/1 (BOOLEAN), bytea BLOB, int8 INTEGER; the driver decodes the first three by declared type;
 * - `COLLATE "C"` is SQLite's default BINARY collation (UTF-8 byte order = code point order, as "C").
 */

export type DialectName = 'pg' | 'sqlite';

/** Column types of a JSON record list (see `records`), as Postgres spells them. */
type RecordType = 'text' | 'integer' | 'bigint' | 'boolean' | 'jsonb' | 'text[]' | 'timestamptz';

export interface Dialect {
  readonly name: DialectName;
  /**
   * Postgres runs the group-committed run writes as one statement with data-modifying CTEs (one round trip
   * per batch); SQLite has none, and runs the same parts one after the other in the batch's transaction,
   * at microseconds each (store/queries/run-writes.ts).
   */
  readonly dataModifyingCtes: boolean;
  /**
   * Whether other processes share the database: Postgres replicas coordinate through advisory locks (the
   * migration lock, executor liveness). The embedded SQLite store has exactly one process (it holds the
   * database file's lock), so there is nobody to coordinate with.
   */
  readonly sharedByProcesses: boolean;
  /** The current time as a timestamp value. */
  readonly now: string;
  /** The column type of a timestamp. */
  readonly timestampType: string;
  /** A timestamp from an ISO-8601 text (a parameter or a JSON field). */
  timestamp(text: string): string;
  /** The timestamp `ms` milliseconds (an SQL number) after the timestamp `ts`. */
  plusMs(ts: string, ms: string): string;
  /** Whole milliseconds from the timestamp `from` to the ISO text `to`, never negative. */
  durationMs(from: string, to: string): string;
  /** The larger of two values of one type, ignoring NULL (Postgres GREATEST). */
  greatest(a: string, b: string): string;
  /** Milliseconds since the epoch of the timestamp `ts`, as a floating-point number. */
  epochMs(ts: string): string;
  /**
   * An aggregate of a GROUP BY: the `fraction` percentile of the numbers `value` in the group (NULLs left
   * out), interpolated between the two nearest values as the SQL standard's percentile_cont is; SQLite's
   * percentile extension and Postgres compute the same number. Postgres's own percentile_cont is an
   * ordered-set aggregate, which needs its input sorted by the group: over a million rows that is a sort
   * on disk (4.8 s measured), so the group's values are collected (hash aggregation) and each group's
   * array sorted on its own (1.9 s).
   */
  percentileCont(fraction: number, value: string): string;
  /** A parameter of a scalar Postgres type, where Postgres needs the type spelled out. */
  typed(param: string, pgType: 'text' | 'boolean' | 'jsonb'): string;
  /** A parameter holding an array of texts (a JS array; the SQLite driver passes it as JSON text). */
  textArray(param: string): string;
  /** `column` is one of the texts in the array parameter `param`. */
  inArray(column: string, param: string): string;
  /** The text array column `column` contains the text `value`. */
  arrayContains(column: string, value: string): string;
  /**
   * `(a, b) < (x, y)`, the keyset cursor of a list in (a DESC, b DESC) order, in the form the dialect's
   * planner seeks an index on `a` by: SQLite picked a worse index for the row value beside other bounds.
   */
  rowLessThan(columns: readonly [string, string], values: readonly [string, string]): string;
  /**
   * One arm of a UNION ALL of index-ordered reads that the compound's ORDER BY merges as they stream: Postgres
   * merges arms that carry their own `order` and `limit` (Merge Append; without them it sorted every row
   * of every arm), SQLite plain arms (its MERGE (UNION ALL); an arm in a subquery it sorts again).
   */
  orderedArm(select: string, order: string, limit: string): string;
  /** A row source of the texts in the array column `column` (of a table earlier in the FROM), as `alias.value`. */
  arrayElements(column: string, alias: string): string;
  /** The JSON value at `keys` inside the JSON column `column`. */
  jsonPath(column: string, ...keys: string[]): string;
  /** The flat JSON object `object` (e.g. labels) has every key/value of the JSON object parameter `param`. */
  objectContains(object: string, param: string): string;
  /**
   * A row source from a parameter holding a JSON array of records: `columns` is a column list as
   * Postgres's `jsonb_to_recordset` takes it (`run_id text, seq integer, data jsonb`).
   */
  records(param: string, alias: string, columns: string): string;
  /** Bytes inside a JSON record: the JS encoding, and the SQL that turns the field back into bytes. */
  bytesToText(bytes: Uint8Array): string;
  bytesFromText(text: string): string;
  /** Row lock clauses: SQLite has one writer at a time, so a transaction's reads are already stable. */
  readonly forUpdate: string;
  forUpdateOf(alias: string): string;
  readonly forUpdateSkipLocked: string;
}

export const PG_DIALECT: Dialect = {
  name: 'pg',
  dataModifyingCtes: true,
  sharedByProcesses: true,
  now: 'now()',
  timestampType: 'timestamptz',
  timestamp: (text) => `(${text})::timestamptz`,
  plusMs: (ts, ms) => `${ts} + (${ms})::double precision * interval '1 millisecond'`,
  durationMs: (from, to) =>
    `GREATEST(0, round(extract(epoch FROM ((${to})::timestamptz - ${from})) * 1000))::bigint`,
  greatest: (a, b) => `GREATEST(${a}, ${b})`,
  epochMs: (ts) => `date_part('epoch', ${ts}) * 1000`,
  percentileCont: (fraction, value) =>
    `(SELECT percentile_cont(${fraction}) WITHIN GROUP (ORDER BY v) FROM unnest(array_agg(${value})) AS v)`,
  typed: (param, pgType) => `${param}::${pgType}`,
  textArray: (param) => `${param}::text[]`,
  inArray: (column, param) => `${column} = ANY(${param}::text[])`,
  arrayContains: (column, value) => `${column} @> ARRAY[${value}]::text[]`,
  arrayElements: (column, alias) => `unnest(${column}) AS ${alias}(value)`,
  rowLessThan: ([a, b], [x, y]) => `(${a}, ${b}) < (${x}, ${y})`,
  orderedArm: (select, order, limit) => `(${select} ${order} LIMIT ${limit})`,
  jsonPath: (column, ...keys) => [column, ...keys.map((key) => `'${key}'`)].join(' -> '),
  objectContains: (object, param) => `${object} @> ${param}::jsonb`,
  records: (param, alias, columns) => `jsonb_to_recordset(${param}::jsonb) AS ${alias}(${columns})`,
  bytesToText: (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
  bytesFromText: (text) => `decode(${text}, 'base64')`,
  forUpdate: ' FOR UPDATE',
  forUpdateOf: (alias) => ` FOR UPDATE OF ${alias}`,
  forUpdateSkipLocked: ' FOR UPDATE SKIP LOCKED',
};

/** strftime format of every stored timestamp: fixed width, so text order is time order. */
const ISO_MS = `'%Y-%m-%dT%H:%M:%fZ'`;

/** How one field of a JSON record becomes a column on SQLite. */
function sqliteField(type: RecordType, name: string): string {
  switch (type) {
    case 'jsonb':
    case 'text[]':
      // -> yields JSON text; a JSON null becomes SQL NULL, as jsonb_to_recordset does.
      return `nullif(value -> '$.${name}', 'null')`;
    case 'timestamptz':
      return `strftime(${ISO_MS}, value ->> '$.${name}')`;
    default:
      // ->> yields the SQL value: text, integer, and 1/0 for true/false.
      return `value ->> '$.${name}'`;
  }
}

const RECORD_TYPES = new Set<string>([
  'text',
  'integer',
  'bigint',
  'boolean',
  'jsonb',
  'text[]',
  'timestamptz',
]);

function parseColumns(columns: string): Array<{ name: string; type: RecordType }> {
  return columns.split(',').map((column) => {
    const [name, type, ...rest] = column.trim().split(/\s+/);
    if (!name || !type || rest.length > 0 || !RECORD_TYPES.has(type)) {
      throw new Error(`record column "${column.trim()}" is not "name type" with a known type`);
    }
    return { name, type: type as RecordType };
  });
}

/** Record column lists are constants, so each is parsed once. */
const sqliteRecordColumns = new Map<string, string>();

export const SQLITE_DIALECT: Dialect = {
  name: 'sqlite',
  dataModifyingCtes: false,
  sharedByProcesses: false,
  now: `strftime(${ISO_MS}, 'now')`,
  timestampType: 'TEXT',
  timestamp: (text) => `strftime(${ISO_MS}, ${text})`,
  plusMs: (ts, ms) => `strftime(${ISO_MS}, ${ts}, '+' || ((${ms}) / 1000.0) || ' seconds')`,
  durationMs: (from, to) =>
    `max(0, CAST(round((unixepoch(${to}, 'subsec') - unixepoch(${from}, 'subsec')) * 1000) AS INTEGER))`,
  // SQLite's max() is NULL when any argument is.
  greatest: (a, b) => `max(coalesce(${a}, ${b}), coalesce(${b}, ${a}))`,
  epochMs: (ts) => `unixepoch(${ts}, 'subsec') * 1000`,
  percentileCont: (fraction, value) => `percentile_cont(${value}, ${fraction})`,
  typed: (param) => param,
  textArray: (param) => param,
  inArray: (column, param) => `${column} IN (SELECT value FROM json_each(${param}))`,
  arrayContains: (column, value) => `EXISTS (SELECT 1 FROM json_each(${column}) WHERE value = ${value})`,
  arrayElements: (column, alias) => `json_each(${column}) AS ${alias}`,
  rowLessThan: ([a, b], [x, y]) => `${a} <= ${x} AND (${a} < ${x} OR ${b} < ${y})`,
  orderedArm: (select) => select,
  jsonPath: (column, ...keys) => `(${column} -> '$.${keys.join('.')}')`,
  objectContains: (object, param) =>
    `NOT EXISTS (SELECT 1 FROM json_each(${param}) AS want WHERE NOT EXISTS (
       SELECT 1 FROM json_each(${object}) AS have
        WHERE have.key = want.key AND have.type = want.type AND have.value = want.value))`,
  records: (param, alias, columns) => {
    let fields = sqliteRecordColumns.get(columns);
    if (fields === undefined) {
      fields = parseColumns(columns)
        .map(({ name, type }) => `${sqliteField(type, name)} AS ${name}`)
        .join(', ');
      sqliteRecordColumns.set(columns, fields);
    }
    return `(SELECT ${fields} FROM json_each(${param})) AS ${alias}`;
  },
  // SQLite has unhex() but no base64 decoder.
  bytesToText: (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex'),
  bytesFromText: (text) => `unhex(${text})`,
  forUpdate: '',
  forUpdateOf: () => '',
  forUpdateSkipLocked: '',
};
