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
