/** Both drivers return timestamptz as Date; the store's types carry ISO strings. */
export function toIso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/** int8 and count(*) arrive as number (or bigint/string past 2^53); the store's types carry numbers. */
export function toNumber(value: number | string | bigint): number {
  return Number(value);
}

/** Sets an optional property only when the column is not NULL, so absent fields stay absent. */
export function optional<T, K extends keyof T>(target: T, key: K, value: T[K] | null): void {
  if (value !== null && value !== undefined) target[key] = value;
}

export function toBytes(value: Uint8Array): Uint8Array {
  // node-postgres returns Buffer (a Uint8Array subclass); hand out plain views either way.
  return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
}

type Camel<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<Camel<Tail>>}`
  : S;

/** A row with its snake_case column names in camelCase. */
export type CamelRow<Row> = { [K in keyof Row as K extends string ? Camel<K> : K]: Row[K] };

const camelNames = new Map<string, string>();

/**
 * The row's values under camelCase names (`key_hash` → `keyHash`), as the driver gave them: take out and
 * convert the columns that need it (timestamps, int8, renamed ones) before.
 */
export function camelRow<Row extends object>(row: Row): CamelRow<Row> {
  const camel: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(row)) {
    let name = camelNames.get(column);
    if (name === undefined) {
      name = column.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
      camelNames.set(column, name);
    }
    camel[name] = value;
  }
  return camel as CamelRow<Row>;
}
