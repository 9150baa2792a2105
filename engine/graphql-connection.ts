/**
 * Relay cursor connections in a GraphQL answer's data, for cursor pagination (engine/pagination.ts): the
 * connection is the object holding `pageInfo { endCursor hasNextPage }`, its items are its `edges` (else its
 * `nodes`). Found by the step's connectionPath, else as the one object of the data that holds a pageInfo
 * (breadth first through objects, not into lists), so the common shape needs no setting. Pure.
 */
import type { JsonObject, JsonValue } from '../contract/json.ts';
import { isJsonObject } from './paths.ts';

export interface ConnectionPage {
  /** Where the connection is in the data, as segments (`['repository', 'issues']`). */
  path: string[];
  connection: JsonObject;
  /** `edges` when the connection has them, else `nodes`; undefined when it has neither list. */
  itemsKey: 'edges' | 'nodes' | undefined;
  items: JsonValue[] | undefined;
  /** undefined: pageInfo has no endCursor (not selected). */
  endCursor: JsonValue | undefined;
  /** undefined: pageInfo has no boolean hasNextPage (not selected). */
  hasNextPage: boolean | undefined;
}

/** Connections listed in a message when several are found. */
const LISTED = 10;

export function pathText(path: readonly string[]): string {
  return path.length === 0 ? '(the data itself)' : path.join('.');
}

/** Every object of `data` that holds a pageInfo object, breadth first, not inside lists (at most LISTED + 1). */
function findConnections(data: JsonValue): string[][] {
  const found: string[][] = [];
  const pending: Array<[string[], JsonObject]> = isJsonObject(data) ? [[[], data]] : [];
  for (let next = pending.shift(); next !== undefined; next = pending.shift()) {
    const [path, object] = next;
    if (isJsonObject(object.pageInfo)) {
      found.push(path);
      if (found.length > LISTED) break;
      continue;
    }
    for (const key of Object.keys(object)) {
      const child = object[key];
      if (isJsonObject(child)) pending.push([[...path, key], child]);
    }
  }
  return found;
}

function objectAt(data: JsonValue, path: readonly string[]): JsonObject | undefined {
  let current: JsonValue | undefined = data;
  for (const segment of path) {
    if (!isJsonObject(current) || !Object.hasOwn(current, segment)) return undefined;
    current = current[segment];
  }
  return isJsonObject(current) ? current : undefined;
}

/** The connection object at `path` of a value (the merged pages, for appending a page's items). */
export function connectionAt(data: JsonValue, path: readonly string[]): JsonObject | undefined {
  return objectAt(data, path);
}

function pageOf(path: string[], connection: JsonObject): ConnectionPage {
  const pageInfo = connection.pageInfo as JsonObject;
  const itemsKey = Array.isArray(connection.edges)
    ? 'edges'
    : Array.isArray(connection.nodes)
      ? 'nodes'
      : undefined;
  return {
    path,
    connection,
    itemsKey,
    items: itemsKey ? (connection[itemsKey] as JsonValue[]) : undefined,
    endCursor: Object.hasOwn(pageInfo, 'endCursor') ? pageInfo.endCursor : undefined,
    hasNextPage: typeof pageInfo.hasNextPage === 'boolean' ? pageInfo.hasNextPage : undefined,
  };
}

/**
 * The connection of a page: at `path` when one is set (the setting, or where the first page had it),
 * else the one object holding a pageInfo. A problem says what was found instead, for the step's error.
 */
export function locateConnection(
  data: JsonValue,
  path: readonly string[] | null,
): ConnectionPage | { problem: string } {
  if (path !== null) {
    const connection = objectAt(data, path);
    if (connection && isJsonObject(connection.pageInfo)) return pageOf([...path], connection);
    return {
      problem:
        `connectionPath '${pathText(path)}' holds no connection with a pageInfo object in the data` +
        `${connection ? ' (it is an object without pageInfo)' : ''}; the connections found: ${describe(findConnections(data))}`,
    };
  }
  const found = findConnections(data);
  if (found.length === 1) {
    const only = found[0] as string[];
    return pageOf(only, objectAt(data, only) as JsonObject);
  }
  if (found.length === 0) {
    return {
      problem:
        'found no connection in the data: no object holds pageInfo. Select pageInfo { endCursor hasNextPage } ' +
        'beside the edges or nodes you page through, or set cursorPath for a cursor that is not a Relay pageInfo',
    };
  }
  return {
    problem: `found several connections in the data (${describe(found)}): set pagination.connectionPath to the one to page through`,
  };
}

function describe(paths: readonly string[][]): string {
  if (paths.length === 0) return 'none';
  const shown = paths.slice(0, LISTED).map((path) => `'${pathText(path)}'`);
  return `${shown.join(', ')}${paths.length > LISTED ? ', …' : ''}`;
}

/** `repository.issues` → segments; undefined or empty: none set. */
export function parseConnectionPath(text: string | undefined): string[] | null {
  const trimmed = text?.trim().replace(/^\$\.?/, '') ?? '';
  return trimmed === '' ? null : trimmed.split('.');
}
