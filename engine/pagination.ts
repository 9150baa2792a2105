/**
 * The pagination state machine of an HTTP step. It performs no requests: the step asks
 * `variables()` for the next request's counters, sends it, and hands the parsed page to
 * `accept()`, which merges it and says whether to go on. `result()` is the merged data.
 *
 * Rules beyond semantics.md, decided here:
 * - Page items: a root array is the page's item list; for an object page it is the longest array
 *   found by walking its nested objects (not inside arrays), e.g. `data` in `{data: [...], meta}`.
 *   An object page without any array has no item count.
 * - Empty page: null, "", [], {}, or an object page whose item list is empty.
 * - Short page (item count < pageSize) stops offsetBased and pageBased pagination, and cursorBased
 *   pagination only for root-array pages: for cursor APIs the cursor is authoritative, and many of
 *   them return fewer items than asked while a next cursor exists.
 * - cursorBased pagination can only go on with a new cursor, so its cursor rules hold with a
 *   stopCondition too (asked first): an empty cursor (null, "", false, [] or {}) or one already sent
 *   (the next page would repeat one already seen) ends it. A cursorPath that finds nothing at all
 *   fails the step on the first page and on a page whose items filled the page (a wrong path would
 *   otherwise end pagination after one page, silently); on a later page that was not full it ends
 *   pagination, since many APIs leave the cursor out of their last page. Empty pages end either way.
 * - Every ending is reported (`summary()`): the rule, the page, and what that page held, so a step
 *   result says why pagination ended.
 * - The cursor is extracted whenever `cursorPath` is set, whatever the type; page and offset
 *   advance for every type.
 * - pageInfo's page/offset/cursor are the values the page was requested with; totalFetched and
 *   mergedResult include the page. totalFetched is the number of items fetched so far: the sum of
 *   the pages' item counts (see above; a non-empty page without any array counts as one item),
 *   which for root arrays is the merged array's length. Summing per page keeps it linear.
 * - The stopCondition stops on a truthy result. `pageInfo.mergedResult` is passed only when the
 *   stopCondition's source mentions `mergedResult`: the sandbox copies its arguments, and copying
 *   the whole accumulated result on every page would make pagination quadratic.
 * - Repeated pages are detected by a SHA-256 of a canonical (key-sorted) serialization of each
 *   page. With a stopCondition only the first two pages are hashed (for the "parameters not
 *   applied" check), since the repeated-page stop rule applies without a stopCondition only.
 * - Merge conflicts at the root: an empty page of another kind than the accumulated array/object
 *   (a closing `[]`, null or "") is not merged; a non-empty one (an error object after array
 *   pages) fails the step rather than silently dropping data. Inside objects, null never replaces
 *   an accumulated array or object; any other kind mismatch takes the newest value.
 * - maxPages: the step fails only when a page beyond the cap would be needed; a last page that is
 *   exactly the cap-th succeeds.
 * - A GraphQL connection (`connection`: cursor pagination of a GraphQL step without cursorPath;
 *   graphql-connection.ts finds it): the connection's edges (else nodes) are the page's items, its
 *   pageInfo.endCursor the cursor, and pageInfo.hasNextPage false ends pagination before any other rule
 *   (`noNextPage`); a page whose pageInfo lacks hasNextPage, or endCursor while there is a next page,
 *   fails the step (the query must select them). Pages merge into the first: each later page's edges and
 *   nodes are appended to the connection's and its pageInfo replaces the connection's; the rest of the
 *   data is the first page's.
 */
import { createHash } from 'node:crypto';
import type { PaginationStop, StepPagination } from '../contract/api/run.ts';
import type { JsonObject, JsonValue } from '../contract/json.ts';
import { type ConnectionPage, connectionAt, locateConnection, pathText } from './graphql-connection.ts';
import { getByPath, isJsonObject, setOwnKey } from './paths.ts';
import type { Evaluate } from './template.ts';

export type PaginationType = 'offsetBased' | 'pageBased' | 'cursorBased';

export interface PaginationConfig {
  type: PaginationType;
  pageSize?: string | number;
  cursorPath?: string;
  stopCondition?: string;
  maxPages?: number;
  /**
   * GraphQL cursor pagination through a Relay connection (no cursorPath): where it is in the data (dotted
   * segments), or null to find the one object that holds a pageInfo.
   */
  connection?: { path: string[] | null };
  /** A GraphQL step's cursor variable: named in the message when pages do not differ. */
  cursorVariable?: string;
}

export interface PaginatorDeps {
  evaluate: Evaluate;
  sourceData: JsonObject;
}

/** The counters for the next request; the HTTP step merges them into sourceData. */
export type PaginationVariables = {
  page: number;
  offset: number;
  cursor: JsonValue;
  limit: number;
  pageSize: number;
};

export interface PageResponse {
  data: JsonValue;
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
}

export type StopReason = PaginationStop;

export type AcceptResult = { done: false } | { done: true; reason: StopReason };

export interface Paginator {
  variables(): PaginationVariables;
  accept(response: PageResponse): Promise<AcceptResult>;
  /** The merged pages (null before the first page). The live accumulator: do not mutate. */
  result(): JsonValue;
  /** Items fetched so far, as the stop condition's pageInfo.totalFetched counts them (object pages too). */
  totalFetched(): number;
  /** Once pagination ended: pages and items fetched, the rule that ended it and why (the step result's). */
  summary(): StepPagination | undefined;
  /** Units of work done so far (values cloned, hashed, measured, merged); lets tests check linearity. */
  work(): number;
}

export type PaginationErrorCode =
  | 'config'
  | 'parametersNotApplied'
  | 'maxPages'
  | 'shapeMismatch'
  | 'stopCondition'
  | 'cursorNotFound'
  | 'finished';

export class PaginationError extends Error {
  readonly code: PaginationErrorCode;

  constructor(code: PaginationErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PaginationError';
    this.code = code;
  }
}

export const DEFAULT_PAGE_SIZE = 50;
export const DEFAULT_MAX_PAGES = 1000;

export interface PaginationSettings {
  type: PaginationType;
  pageSize: number;
  cursorPath: string | null;
  stopCondition: string | null;
  maxPages: number;
  connection: { path: string[] | null } | null;
}

/** Validates and normalises a config; usable at save time. Throws PaginationError `config`. */
export function parsePaginationSettings(config: PaginationConfig): PaginationSettings {
  const types: readonly string[] = ['offsetBased', 'pageBased', 'cursorBased'];
  if (!types.includes(config.type)) {
    throw new PaginationError('config', `Unsupported pagination type '${String(config.type)}'`);
  }
  const pageSize = parsePositiveInteger(config.pageSize, DEFAULT_PAGE_SIZE, 'pageSize');
  const maxPages = parsePositiveInteger(config.maxPages, DEFAULT_MAX_PAGES, 'maxPages');
  const cursorPath = config.cursorPath?.trim() ? config.cursorPath.trim() : null;
  const connection =
    config.type === 'cursorBased' && cursorPath === null ? (config.connection ?? null) : null;
  if (config.type === 'cursorBased' && cursorPath === null && connection === null) {
    throw new PaginationError('config', 'cursorBased pagination needs a cursorPath');
  }
  const stopCondition = config.stopCondition?.trim() ? config.stopCondition.trim() : null;
  return { type: config.type, pageSize, cursorPath, stopCondition, maxPages, connection };
}

function parsePositiveInteger(raw: string | number | undefined, fallback: number, field: string): number {
  if (raw === undefined || (typeof raw === 'string' && raw.trim() === '')) return fallback;
  const value = typeof raw === 'number' ? raw : Number(raw.trim());
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new PaginationError(
      'config',
      `Pagination ${field} must be a positive integer, got '${String(raw)}'`,
    );
  }
  return value;
}

export function createPaginator(config: PaginationConfig, deps: PaginatorDeps): Paginator {
  const settings = parsePaginationSettings(config);
  const { pageSize, cursorPath, stopCondition, maxPages, connection } = settings;
  /** The connection's path: the setting, else where the first page had it. */
  let connectionPath = connection?.path ?? null;
  const passMergedResult = stopCondition?.includes('mergedResult') ?? false;
  const counter = { work: 0 };

  let page = 1;
  let offset = 0;
  let cursor: JsonValue = null;
  let pagesMerged = 0;
  let pagesReceived = 0;
  let totalFetched = 0;
  let merged: JsonValue | undefined;
  let finished = false;
  let firstPageHash: string | null = null;
  let ended: StepPagination | undefined;
  const seenPages = new Set<string>();
  const sentCursors = new Set<string>();

  const finish = (reason: StopReason, why: string): AcceptResult => {
    finished = true;
    ended = { pages: pagesReceived, items: totalFetched, stoppedBy: reason, reason: why };
    return { done: true, reason };
  };

  async function accept(response: PageResponse): Promise<AcceptResult> {
    if (finished) throw new PaginationError('finished', 'Pagination already finished');
    pagesReceived += 1;
    const data = response.data;
    let relay: ConnectionPage | undefined;
    if (connection) {
      const located = locateConnection(data, connectionPath);
      if ('problem' in located) {
        finished = true;
        throw new PaginationError('cursorNotFound', `Pagination on page ${page} ${located.problem}`);
      }
      relay = located;
      connectionPath = located.path;
    }
    const items = relay ? (relay.items?.length ?? null) : pageItemCount(data, counter);
    const empty = relay ? items === 0 : isEmptyPage(data, items);

    if (stopCondition === null || pagesReceived <= 2) {
      const hash = hashPage(data, counter);
      if (pagesReceived === 2 && hash === firstPageHash && !empty) {
        finished = true;
        throw new PaginationError(
          'parametersNotApplied',
          'Pagination parameters are not being applied: the first two pages are identical. ' +
            (config.cursorVariable !== undefined && settings.type === 'cursorBased'
              ? `Pass $${config.cursorVariable} to the paginated field's cursor argument (after: $${config.cursorVariable}) so each page differs.`
              : 'Use <<page>>, <<offset>>, <<cursor>> or <<limit>> in the request so each page differs.'),
        );
      }
      if (pagesReceived === 1) firstPageHash = hash;
      if (stopCondition === null && seenPages.has(hash)) {
        return finish('repeatedPage', `page ${page} repeated an earlier page (it was not merged)`);
      }
      seenPages.add(hash);
    }

    merged = relay
      ? mergeConnectionPage(merged, data, relay, counter)
      : mergePage(merged, data, empty, pagesMerged, counter);
    pagesMerged += 1;
    totalFetched += relay ? (items ?? 0) : (items ?? (empty ? 0 : 1));
    // undefined: the path finds nothing on this page (unlike a cursor that is there and null).
    const foundCursor = relay
      ? relay.endCursor
      : cursorPath === null
        ? undefined
        : getByPath(data, cursorPath);
    const nextCursor = foundCursor ?? null;

    if (relay) {
      const where = `'${pathText(relay.path)}'`;
      if (relay.hasNextPage === false) {
        return finish('noNextPage', `page ${page} had pageInfo.hasNextPage false at ${where}`);
      }
      const missing =
        relay.hasNextPage === undefined ? 'hasNextPage' : foundCursor === undefined ? 'endCursor' : '';
      if (missing) {
        finished = true;
        throw new PaginationError(
          'cursorNotFound',
          `Pagination on page ${page}: the pageInfo of the connection at ${where} has no ${missing}; ` +
            'select pageInfo { endCursor hasNextPage } in the query',
        );
      }
    }

    if (stopCondition !== null) {
      const pageInfo: JsonObject = { page, offset, cursor, totalFetched };
      if (passMergedResult) pageInfo.mergedResult = merged;
      const stopResponse: JsonObject = { data, headers: lowerCaseHeaders(response.headers) };
      let verdict: JsonValue | undefined;
      try {
        verdict = await deps.evaluate(stopCondition, [stopResponse, pageInfo, deps.sourceData]);
      } catch (error) {
        finished = true;
        const message = error instanceof Error ? error.message : String(error);
        throw new PaginationError(
          'stopCondition',
          `Pagination stopCondition failed on page ${page}: ${message}`,
          {
            cause: error,
          },
        );
      }
      if (verdict) return finish('stopCondition', `the stopCondition returned true on page ${page}`);
    } else {
      if (empty) return finish('emptyPage', `page ${page} was empty`);
      const shortRuleApplies = settings.type !== 'cursorBased' || Array.isArray(data);
      if (shortRuleApplies && items !== null && items < pageSize) {
        return finish('shortPage', `page ${page} had ${count(items)}, fewer than pageSize ${pageSize}`);
      }
    }
    if (settings.type === 'cursorBased' && (cursorPath !== null || relay)) {
      const at = relay ? `pageInfo.endCursor of '${pathText(relay.path)}'` : `cursorPath '${cursorPath}'`;
      if (foundCursor === undefined) {
        const full = items !== null && items >= pageSize;
        if (!empty && (page === 1 || full)) {
          finished = true;
          throw new PaginationError(
            'cursorNotFound',
            `Pagination ${at} found nothing on page ${page}` +
              `${full ? `, a full page of ${count(items)}` : ''}; the response has ${describeKeys(data)}. ` +
              'Set cursorPath to where the response holds the next cursor; if the API leaves the cursor out ' +
              'of its last page, add a stopCondition that recognises that page',
          );
        }
        return finish(
          'absentCursor',
          `page ${page} had nothing at ${at} (${empty ? 'an empty page' : describeShortPage(items, pageSize)}, taken as the last page)`,
        );
      }
      if (isEmptyCursor(foundCursor)) {
        return finish('emptyCursor', `page ${page} had ${describeEmpty(foundCursor)} at ${at}`);
      }
      if (sentCursors.has(canonicalJson(foundCursor, counter))) {
        return finish('repeatedCursor', `page ${page} had a cursor at ${at} that was sent before`);
      }
    }

    if (pagesReceived >= maxPages) {
      finished = true;
      throw new PaginationError(
        'maxPages',
        `Pagination hit the maxPages cap of ${maxPages} pages before reaching the last page; ` +
          'raise maxPages or add a stopCondition',
      );
    }
    page += 1;
    offset += pageSize;
    cursor = nextCursor;
    if (cursor !== null) sentCursors.add(canonicalJson(cursor, counter));
    return { done: false };
  }

  return {
    variables: () => ({ page, offset, cursor, limit: pageSize, pageSize }),
    accept,
    result: () => merged ?? null,
    totalFetched: () => totalFetched,
    summary: () => ended,
    work: () => counter.work,
  };
}

type WorkCounter = { work: number };

/** The root array's length, or the longest array reachable through an object page's nested objects. */
function pageItemCount(data: JsonValue, counter: WorkCounter): number | null {
  if (Array.isArray(data)) return data.length;
  if (!isJsonObject(data)) return null;
  let longest: number | null = null;
  const pending: JsonObject[] = [data];
  for (let object = pending.pop(); object !== undefined; object = pending.pop()) {
    for (const key of Object.keys(object)) {
      counter.work += 1;
      const child = object[key];
      if (Array.isArray(child)) longest = Math.max(longest ?? 0, child.length);
      else if (isJsonObject(child)) pending.push(child);
    }
  }
  return longest;
}

function isEmptyPage(data: JsonValue, items: number | null): boolean {
  if (data === null || data === '') return true;
  if (isJsonObject(data) && Object.keys(data).length === 0) return true;
  return items === 0;
}

function describeShortPage(items: number | null, pageSize: number): string {
  return items === null
    ? 'a page without an item list'
    : `a page of ${count(items)}, fewer than pageSize ${pageSize}`;
}

function count(items: number): string {
  return `${items} item${items === 1 ? '' : 's'}`;
}

function describeEmpty(value: JsonValue): string {
  if (value === null) return 'null';
  if (value === '') return 'an empty string';
  if (value === false) return 'false';
  return Array.isArray(value) ? 'an empty array' : 'an empty object';
}

/** Key paths listed when a cursorPath finds nothing: enough to spot the right one, never the values. */
const KEYS_LISTED = 20;

/**
 * What a page offers a cursorPath: the dotted paths of its keys through nested objects (breadth first,
 * not into arrays), or what the page is when it has no keys.
 */
function describeKeys(data: JsonValue): string {
  if (Array.isArray(data)) return `no keys (it is an array of ${data.length} items)`;
  if (!isJsonObject(data)) return `no keys (it is ${data === null ? 'null' : `a ${typeof data}`})`;
  const paths: string[] = [];
  const pending: Array<[string, JsonObject]> = [['', data]];
  let more = false;
  for (let next = pending.shift(); next !== undefined; next = pending.shift()) {
    const [prefix, object] = next;
    for (const key of Object.keys(object)) {
      if (paths.length === KEYS_LISTED) {
        more = true;
        break;
      }
      const path = `${prefix}${key}`;
      paths.push(path);
      const child = object[key];
      if (isJsonObject(child)) pending.push([`${path}.`, child]);
    }
    if (more) break;
  }
  return `the keys ${paths.join(', ')}${more ? ', …' : ''}`;
}

function isEmptyCursor(value: JsonValue): boolean {
  if (value === null || value === '' || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  return isJsonObject(value) && Object.keys(value).length === 0;
}

function lowerCaseHeaders(headers: PageResponse['headers']): JsonObject {
  const out: JsonObject = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const key = name.toLowerCase();
    const incoming: JsonValue = typeof value === 'string' ? value : [...value];
    const existing = Object.hasOwn(out, key) ? out[key] : undefined;
    const combined: JsonValue =
      existing === undefined ? incoming : [existing, incoming].flat().filter((v) => typeof v === 'string');
    setOwnKey(out, key, combined);
  }
  return out;
}

function hashPage(data: JsonValue, counter: WorkCounter): string {
  return createHash('sha256').update(canonicalJson(data, counter)).digest('base64');
}

/**
 * JSON with object keys sorted, so equal values serialize equally whatever their key order. Built by
 * concatenation (no per-node arrays): it runs over every page of a pagination without stop condition.
 */
function canonicalJson(value: JsonValue, counter: WorkCounter): string {
  counter.work += 1;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      out += canonicalJson(value[i]!, counter);
    }
    return `${out}]`;
  }
  const keys = Object.keys(value);
  if (!isSorted(keys)) keys.sort();
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (i > 0) out += ',';
    out += `${JSON.stringify(key)}:${canonicalJson(value[key]!, counter)}`;
  }
  return `${out}}`;
}

function isSorted(keys: readonly string[]): boolean {
  for (let i = 1; i < keys.length; i++) if (keys[i - 1]! > keys[i]!) return false;
  return true;
}

/** A deep copy, so later mutation of the caller's page cannot reach into the accumulator. */
function cloneJson(value: JsonValue, counter: WorkCounter): JsonValue {
  counter.work += 1;
  if (Array.isArray(value)) return value.map((item) => cloneJson(item, counter));
  if (isJsonObject(value)) {
    const out: JsonObject = {};
    for (const key of Object.keys(value)) setOwnKey(out, key, cloneJson(value[key]!, counter));
    return out;
  }
  return value;
}

/**
 * Merges one page into the accumulator in place: the page is copied once (linear in its size)
 * and its parts are then moved in, never re-copying what was accumulated.
 */
function mergePage(
  merged: JsonValue | undefined,
  page: JsonValue,
  empty: boolean,
  pagesMerged: number,
  counter: WorkCounter,
): JsonValue {
  if (merged !== undefined && kindOf(merged) !== kindOf(page) && kindOf(merged) !== 'scalar') {
    // A closing `[]`, null or "" must not wipe what was accumulated; any other page of another
    // kind (an error object after array pages) would silently drop data, so it fails instead.
    if (empty) return merged;
    throw new PaginationError(
      'shapeMismatch',
      `Pagination page ${pagesMerged + 1} is ${describeKind(page)} but earlier pages were ${describeKind(merged)}; ` +
        'the pages cannot be merged',
    );
  }
  return mergeValue(merged, cloneJson(page, counter), counter);
}

/**
 * A GraphQL connection's page merged into the first page (pagination rules above): its edges and nodes
 * appended, its pageInfo taking the connection's place. Linear in the page, like mergePage.
 */
function mergeConnectionPage(
  merged: JsonValue | undefined,
  page: JsonValue,
  relay: ConnectionPage,
  counter: WorkCounter,
): JsonValue {
  if (merged === undefined) return cloneJson(page, counter);
  const target = connectionAt(merged, relay.path);
  if (!target) return mergeValue(merged, cloneJson(page, counter), counter);
  for (const key of ['edges', 'nodes'] as const) {
    const incoming = relay.connection[key];
    const existing = target[key];
    if (!Array.isArray(incoming)) continue;
    if (!Array.isArray(existing)) {
      setOwnKey(target, key, cloneJson(incoming, counter));
      continue;
    }
    for (const item of incoming) existing.push(cloneJson(item, counter));
  }
  setOwnKey(target, 'pageInfo', cloneJson(relay.connection.pageInfo as JsonValue, counter));
  return merged;
}

function describeKind(value: JsonValue): string {
  const kind = kindOf(value);
  return kind === 'array' ? 'an array' : kind === 'object' ? 'an object' : 'a scalar';
}

function kindOf(value: JsonValue): 'array' | 'object' | 'scalar' {
  if (Array.isArray(value)) return 'array';
  return isJsonObject(value) ? 'object' : 'scalar';
}

function mergeValue(current: JsonValue | undefined, incoming: JsonValue, counter: WorkCounter): JsonValue {
  counter.work += 1;
  if (current === undefined) return incoming;
  if (Array.isArray(current) && Array.isArray(incoming)) {
    for (const item of incoming) current.push(item);
    counter.work += incoming.length;
    return current;
  }
  if (isJsonObject(current) && isJsonObject(incoming)) {
    for (const key of Object.keys(incoming)) {
      const existing = Object.hasOwn(current, key) ? current[key] : undefined;
      setOwnKey(current, key, mergeValue(existing, incoming[key]!, counter));
    }
    return current;
  }
  if (incoming === null && (Array.isArray(current) || isJsonObject(current))) return current;
  return incoming;
}
