/**
 * Documentation processing: a system create/update with documentationUrl, an upload, a database system
 * (postgres://, mysql://, mariadb://: its schema) or a GraphQL endpoint (a URL ending in /graphql, or
 * marked #graphql: introspected) stores a pending request; this process then fetches and summarises it
 * in the background (the
 * system is usable at once) and stores the summary, or the reason it failed.
 *
 * Restarts: a request is claimed with a lease (the processing time limit plus a margin). A process that
 * shuts down releases its claims; one that dies leaves them to expire. Every API process sweeps for
 * unclaimed pending requests at start and then periodically, so pending work resumes on whichever process
 * is alive.
 *
 * Failures (platform/supervisor.ts): each claim is an attempt of the request. An answer that settles it (a
 * 404, a zip bomb, nothing usable, the time limit) fails it at once; a failure the next attempt may not meet
 * (a network error, a 5xx, the database unreachable) keeps it pending with the error shown, to be tried again
 * after a growing wait. A request whose attempts failed or were interrupted KUBEGLUE_JOB_MAX_FAILURES times
 * in a row is failed, with the count and the last error, until the system is updated or a file uploaded.
 */
import { randomUUID } from 'node:crypto';
import { type DocumentationLimits, SETTINGS } from '../../config/config.ts';
import type {
  ApiKeyPlacement,
  ApiKeyPlacementDecision,
  DocumentationState,
  Environment,
  System,
} from '../../contract/api/system.ts';
import type { JsonValue } from '../../contract/json.ts';
import type { ResolvedSystem } from '../../contract/wire/run-order.ts';
import { buildCredentialScope } from '../../engine/credentials.ts';
import { GRAPHQL_ACCEPT, graphqlData } from '../../engine/graphql.ts';
import { originOf, systemOrigins } from '../../engine/origins.ts';
import { EGRESS_REFUSED_CODE, EgressGuard, type EgressPolicy } from '../../engine/protocols/egress-policy.ts';
import { applySystemAuth } from '../../engine/system-auth.ts';
import { type JobFailure, JobSupervisor } from '../../platform/supervisor.ts';
import type { DocumentationKey, DocumentationStore, StoredDocumentationState } from '../../store/index.ts';
import type { SystemResolver } from '../cache.ts';
import { crawlable, createFetcher, DocumentationFetchError, displayUrl, type Fetcher } from './fetch.ts';
import { isGraphqlEndpoint } from './parsers/graphql-schema.ts';
import { narrowToKeywords } from './parsers/keywords.ts';
import { type DocumentedPlacement, documentedApiKeyPlacement } from './parsers/placement.ts';
import type { DocumentationSummary, SkippedPart, SummaryDocument } from './parsers/summary.ts';
import {
  readDatabaseSchema,
  SCHEMA_SOURCES,
  type SchemaDialect,
  schemaDialect,
  schemaSourceDialect,
} from './schema-readers.ts';
import { DocumentationSearch, type SearchOutcome } from './search/search.ts';

const UPLOAD_PREFIX = 'upload:';
const LEASE_MARGIN_MS = 30_000;
const SWEEP_BATCH = 20;
const CONCURRENCY = 2;
const SCHEMA_TIMEOUT_MS = 30_000;

// The parsers (OpenAPI, HTML, PDF, zip) and the database clients (schema-readers.ts) load with the first
// documentation to process: most processes never process any, and together they are megabytes resident.
const loadSummarise = () => import('./parsers/summarise.ts');
const loadGraphqlSchema = () => import('./parsers/graphql-schema.ts');

export interface DocumentationServiceOptions {
  store: DocumentationStore;
  systems: SystemResolver;
  egress: EgressPolicy;
  limits: DocumentationLimits;
  log?: (line: string) => void;
  /** How often pending requests nobody holds are looked for (default 30 s). */
  sweepMs?: number;
  /** Runs the processing and the sweep (a supervisor of its own with the defaults otherwise). */
  jobs?: JobSupervisor;
}

/** A failure no retry mends: the content is what it is (too large, a zip bomb, nothing usable, a 404). */
class SettledFailure extends Error {
  override name = 'SettledFailure';
}

/** A request to process; `notBefore` (epoch ms): a retry this process scheduled, due then. */
type QueuedRequest = DocumentationKey & { requestId: string; notBefore?: number };

const INTERRUPTED = 'processing was interrupted (the service stopped while processing)';
/** What a pending request's error says after its message (#recordFailure). */
const RETRY_NOTE = / \(attempt \d+ of \d+; retrying at [^)]*\)$/;

export interface DocumentationUpload {
  bytes: Uint8Array;
  contentType?: string | undefined;
  fileName?: string | undefined;
}

/** What a system write changed, as far as its documentation is concerned. */
export interface SystemWrite {
  created: boolean;
  /** documentationUrl was given in the body (re-fetched even when unchanged). */
  documentationUrlGiven: boolean;
}

export class DocumentationService {
  readonly #store: DocumentationStore;
  readonly #systems: DocumentationServiceOptions['systems'];
  readonly #egress: EgressPolicy;
  readonly #limits: DocumentationLimits;
  readonly #log: (line: string) => void;
  readonly #sweepMs: number;
  readonly #closing = new AbortController();
  readonly #queue: QueuedRequest[] = [];
  readonly #inFlight = new Map<string, { requestId: string; done: Promise<void> }>();
  readonly #jobs: JobSupervisor;
  /** Retries due later in this process (the sweep of any process takes them up too). */
  readonly #retries = new Set<NodeJS.Timeout>();
  readonly #search: DocumentationSearch;
  #sweeping: { stop(): Promise<void> } | undefined;

  constructor(options: DocumentationServiceOptions) {
    this.#store = options.store;
    this.#systems = options.systems;
    this.#egress = options.egress;
    this.#limits = options.limits;
    this.#log = options.log ?? (() => {});
    this.#sweepMs = options.sweepMs ?? 30_000;
    this.#jobs = options.jobs ?? new JobSupervisor({ log: this.#log });
    this.#search = new DocumentationSearch(options.store);
  }

  get limits(): DocumentationLimits {
    return this.#limits;
  }

  /** Resumes pending requests left by earlier processes, now and on every sweep. */
  start(): void {
    this.#sweeping ??= this.#jobs.every({
      job: 'documentation-sweep',
      intervalMs: this.#sweepMs,
      run: () => this.#sweep(),
    });
  }

  /** Stops processing; requests in progress are released so the next process resumes them at once. */
  async close(): Promise<void> {
    this.#closing.abort();
    for (const timer of this.#retries) clearTimeout(timer);
    this.#retries.clear();
    await this.#sweeping?.stop();
    this.#queue.length = 0;
    await Promise.all([...this.#inFlight.values()].map((entry) => entry.done));
  }

  /** Called after a create or update succeeded: starts processing when the write asks for it. */
  async afterWrite(system: System, write: SystemWrite): Promise<System> {
    const key = { systemId: system.id, environment: system.environment };
    if (system.documentationUrl && (write.created || write.documentationUrlGiven)) {
      await this.#request(key, system.documentationUrl, system.documentationKeywords);
    } else if (!system.documentationUrl && schemaDialect(system.url)) {
      // The schema is re-read on every write (the URL or the credentials may have changed), unless the
      // documentation is an upload, which only another upload or a documentationUrl replaces.
      const state = write.created ? undefined : await this.#store.state(key);
      if (!state?.source.startsWith(UPLOAD_PREFIX)) {
        const dialect = schemaDialect(system.url) as SchemaDialect;
        await this.#request(key, SCHEMA_SOURCES[dialect], system.documentationKeywords);
      }
    } else if (!system.documentationUrl && system.url && isGraphqlEndpoint(system.url)) {
      // A GraphQL endpoint documents itself: its schema is introspected, again on every write (as a
      // database's schema is read), unless the documentation is an upload.
      const state = write.created ? undefined : await this.#store.state(key);
      if (!state?.source.startsWith(UPLOAD_PREFIX)) {
        await this.#request(key, system.url, system.documentationKeywords);
      }
    }
    return this.present(system);
  }

  /** An uploaded file replaces whatever documentation the system had; no URL is crawled. */
  async upload(system: System, file: DocumentationUpload): Promise<DocumentationState> {
    const key = { systemId: system.id, environment: system.environment };
    const name = (file.fileName ?? '').replace(/[^\w.-]+/g, '_').slice(0, 200) || 'file';
    await this.#request(key, `${UPLOAD_PREFIX}${name}`, system.documentationKeywords, file);
    const state = await this.#store.state(key);
    if (!state) throw new Error('the documentation request was not stored');
    return this.publicState(state);
  }

  /** The system with its documentation state and, for apiKey auth, where the key goes and why. */
  async present(system: System, known?: Map<string, StoredDocumentationState>): Promise<System> {
    const state = known
      ? known.get(variantName({ systemId: system.id, environment: system.environment }))
      : await this.#store.state({ systemId: system.id, environment: system.environment });
    const presented: System = state ? { ...system, documentation: this.publicState(state) } : { ...system };
    if (system.authType === 'apiKey') {
      presented.apiKeyPlacement = decidePlacement(
        Object.keys(system.credentials),
        parsePlacement(state?.apiKeyPlacement),
      );
    }
    return presented;
  }

  async presentAll(systems: System[]): Promise<System[]> {
    if (systems.length === 0) return systems;
    const states = new Map((await this.#store.states()).map((state) => [variantName(state), state]));
    return Promise.all(systems.map((system) => this.present(system, states)));
  }

  /**
   * The state as the API shows it: without the request id and the placement, with the progress of the
   * attempts (an attempt holds an unexpired lease while it runs; a failed one leaves retryAt).
   */
  publicState(state: StoredDocumentationState): DocumentationState {
    const pending = state.status === 'pending';
    const leased = state.leaseUntil !== undefined && Date.parse(state.leaseUntil) > Date.now();
    return {
      status: state.status,
      source: state.source,
      requestedAt: state.requestedAt,
      ...(state.fetchedAt ? { fetchedAt: state.fetchedAt } : {}),
      ...(state.error ? { error: state.error } : {}),
      processing: pending && leased && state.retryAt === undefined,
      attempts: state.attempts,
      maxAttempts: this.#jobs.settings.maxFailures,
      ...(pending && state.retryAt ? { retryAt: state.retryAt } : {}),
    };
  }

  async state(key: DocumentationKey): Promise<StoredDocumentationState | undefined> {
    return this.#store.state(key);
  }

  async summary(key: DocumentationKey): Promise<DocumentationSummary | undefined> {
    const text = await this.#store.summary(key);
    return text === undefined ? undefined : (JSON.parse(text) as DocumentationSummary);
  }

  /** Keyword search over the variant's kept summary (search/search.ts). */
  search(key: DocumentationKey, keywords: string, limit: number): Promise<SearchOutcome> {
    return this.#search.search(key, keywords, limit);
  }

  /** The documented placement of a variant's API key, for runs. */
  async placementFor(key: DocumentationKey): Promise<ApiKeyPlacement | undefined> {
    const state = await this.#store.state(key);
    return parsePlacement(state?.apiKeyPlacement)?.placement;
  }

  async forget(systemId: string, environment: Environment | undefined): Promise<void> {
    const environments: Environment[] = environment ? [environment] : ['dev', 'prod'];
    for (const env of environments) await this.#store.delete({ systemId, environment: env });
  }

  async #request(
    key: DocumentationKey,
    source: string,
    keywords: string[] | undefined,
    upload?: DocumentationUpload,
  ): Promise<void> {
    const requestId = randomUUID();
    await this.#store.request({
      ...key,
      requestId,
      source,
      keywords: keywords && keywords.length > 0 ? JSON.stringify(keywords) : undefined,
      upload: upload ? { bytes: upload.bytes, contentType: upload.contentType } : undefined,
      requestedAt: new Date().toISOString(),
    });
    this.#enqueue({ ...key, requestId });
  }

  async #sweep(): Promise<void> {
    if (this.#closing.signal.aborted) return;
    for (const entry of await this.#store.unclaimed(new Date().toISOString(), SWEEP_BATCH))
      this.#enqueue(entry);
  }

  #enqueue(entry: QueuedRequest): void {
    if (this.#closing.signal.aborted) return;
    const name = variantName(entry);
    if (this.#inFlight.get(name)?.requestId === entry.requestId) return;
    if (this.#queue.some((queued) => queued.requestId === entry.requestId)) return;
    this.#queue.push(entry);
    this.#drain();
  }

  #drain(): void {
    while (this.#inFlight.size < CONCURRENCY) {
      // One processing per variant at a time: a newer request waits for the older one (which will not store).
      const index = this.#queue.findIndex((queued) => !this.#inFlight.has(variantName(queued)));
      if (index < 0) return;
      const [entry] = this.#queue.splice(index, 1) as [QueuedRequest];
      const name = variantName(entry);
      const done = this.#process(entry)
        .catch((error: unknown) =>
          // Claiming failed (the store): the request stays unclaimed and the next sweep takes it up.
          this.#log(`documentation of ${entry.systemId}: claiming failed: ${(error as Error).message}`),
        )
        .finally(() => {
          this.#inFlight.delete(name);
          this.#drain();
        });
      this.#inFlight.set(name, { requestId: entry.requestId, done });
    }
  }

  async #process(entry: QueuedRequest): Promise<void> {
    const key = { systemId: entry.systemId, environment: entry.environment };
    // A timer may fire a millisecond before the wall clock reaches its time: the retry it brings is due.
    const now = Math.max(Date.now(), (entry.notBefore ?? 0) + 1);
    const claimed = await this.#store.claim(key, {
      requestId: entry.requestId,
      now: new Date(now).toISOString(),
      leaseUntil: new Date(now + this.#limits.timeoutMs + LEASE_MARGIN_MS).toISOString(),
    });
    if (!claimed) return;
    const timeout = AbortSignal.timeout(this.#limits.timeoutMs);
    const signal = AbortSignal.any([timeout, this.#closing.signal]);
    // The system's credentials, once known, are taken out of every message (a connection URL's password…).
    let redact = (text: string) => text;
    const failuresBefore = claimed.attempts - 1;
    await this.#jobs.attempt({
      job: 'documentation',
      subject: `system ${key.systemId} (${key.environment})`,
      failuresBefore,
      // An attempt that left no error behind was interrupted: the process stopped or died during it.
      lastError: failuresBefore > 0 ? (claimed.error?.replace(RETRY_NOTE, '') ?? INTERRUPTED) : undefined,
      redact: (text) => redact(text),
      permanent: (error) => error instanceof SettledFailure,
      record: (failure) => this.#recordFailure(entry, failure),
      run: async () => {
        let made: DocumentationSummary;
        try {
          const keywords = claimed.keywords ? (JSON.parse(claimed.keywords) as string[]) : undefined;
          const raw = await this.#make(
            claimed.source,
            key,
            claimed.upload,
            claimed.uploadType,
            signal,
            (system) => {
              const { redactor } = buildCredentialScope([system], undefined);
              redact = (text) => redactor.string(text);
            },
          );
          const { limitRetained } = await loadSummarise();
          made = limitRetained(narrowToKeywords(raw, keywords), this.#limits.maxRetainedChars);
          if (made.documents.length === 0 && raw.documents.length === 0) {
            const reasons = made.skipped.map((part) => `${part.source}: ${part.reason}`).join('; ');
            throw new SettledFailure(
              `nothing usable was found${reasons ? ` (${reasons.slice(0, 1000)})` : ''}`,
            );
          }
        } catch (error) {
          if (this.#closing.signal.aborted) {
            // Shutting down: the next process takes the request up again, and the attempt does not count.
            await this.#store.release(key, entry.requestId).catch(() => {});
            return;
          }
          if (timeout.aborted)
            throw new SettledFailure(
              `processing ran past the time limit of ${this.#limits.timeoutMs} ms (${SETTINGS.tree.documentation.timeoutMs.name})`,
            );
          if (mayPass(error)) throw error;
          throw error instanceof SettledFailure ? error : new SettledFailure((error as Error).message);
        }
        const placement = documentedApiKeyPlacement(made);
        // A failure to store is the store's, not the documentation's: retried like a network error.
        const stored = await this.#store.complete(key, entry.requestId, {
          summary: JSON.stringify(made),
          apiKeyPlacement: placement ? JSON.stringify(placement) : undefined,
          fetchedAt: new Date().toISOString(),
        });
        if (stored) this.#log(`documentation of ${key.systemId} (${key.environment}) is ready`);
      },
    });
  }

  /** A failed attempt, on the request: pending with the error until the retry, or failed for good. */
  async #recordFailure(entry: QueuedRequest, failure: JobFailure): Promise<void> {
    const key = { systemId: entry.systemId, environment: entry.environment };
    if (failure.terminal === 'permanent') {
      await this.#store.fail(key, entry.requestId, failure.message);
      return;
    }
    if (failure.terminal === 'exhausted') {
      await this.#store.fail(
        key,
        entry.requestId,
        `processing failed ${failure.failures} times in a row (${SETTINGS.tree.jobs.maxFailures.name}), the last time: ` +
          `${failure.message}. Update the system or upload the file again to retry`,
      );
      return;
    }
    const retryAt = failure.retryAt ?? new Date();
    await this.#store.retry(key, entry.requestId, {
      error: `${failure.message} (attempt ${failure.failures} of ${this.#jobs.settings.maxFailures}; retrying at ${retryAt.toISOString()})`,
      notBefore: retryAt.toISOString(),
    });
    if (this.#closing.signal.aborted) return;
    const timer = setTimeout(
      () => {
        this.#retries.delete(timer);
        this.#enqueue({ ...key, requestId: entry.requestId, notBefore: retryAt.getTime() });
      },
      Math.max(0, retryAt.getTime() - Date.now()),
    );
    timer.unref();
    this.#retries.add(timer);
  }

  async #make(
    source: string,
    key: DocumentationKey,
    upload: Uint8Array | undefined,
    uploadType: string | undefined,
    signal: AbortSignal,
    onSystem: (system: ResolvedSystem) => void,
  ): Promise<DocumentationSummary> {
    // Not a run: documentation is fetched as before while the System is not Ready (its pages are often public).
    const [system] = await this.#systems.resolveForRun([key.systemId], key.environment as Environment, {
      unready: 'allow',
    });
    if (!system) throw new Error(`system '${key.systemId}' no longer exists`);
    onSystem(system);
    if (source.startsWith(UPLOAD_PREFIX)) {
      if (!upload) throw new Error('the uploaded file is no longer stored; upload it again');
      const name = source.slice(UPLOAD_PREFIX.length);
      const part = await (await loadSummarise()).summariseFile(
        { bytes: upload, name, contentType: uploadType, source },
        { zip: this.#limits.zip, openapi: this.#limits.openapi, signal },
      );
      return { documents: part.documents, skipped: part.skipped, truncated: false };
    }
    const guard = new EgressGuard(this.#egress).withAllow(system.allowedNetworks);
    const dialect = schemaSourceDialect(source);
    if (dialect) return this.#readSchema(dialect, system, guard, signal);
    const fetcher = createFetcher(guard, signal);
    try {
      if (isGraphqlEndpoint(source)) return await this.#introspect(system, source, fetcher);
      return await this.#crawl(source, fetcher, signal);
    } finally {
      await fetcher.close().catch(() => {});
    }
  }

  async #crawl(start: string, fetcher: Fetcher, signal: AbortSignal): Promise<DocumentationSummary> {
    const documents: SummaryDocument[] = [];
    const skipped: SkippedPart[] = [];
    const queue = [start];
    const seen = new Set([start]);
    let total = 0;
    let pages = 0;
    while (queue.length > 0 && pages < this.#limits.maxPages) {
      const url = queue.shift() as string;
      pages += 1;
      const first = url === start;
      try {
        const room = Math.min(this.#limits.maxBytes, this.#limits.maxTotalBytes - total);
        if (room <= 0) {
          skipped.push({
            source: displayUrl(url),
            reason: `crawl byte limit reached (${SETTINGS.tree.documentation.maxTotalBytes.name})`,
          });
          break;
        }
        const file = await fetcher.fetch(url, room);
        total += file.bytes.length;
        const part = await (await loadSummarise()).summariseFile(
          {
            bytes: file.bytes,
            name: file.url,
            contentType: file.contentType,
            source: displayUrl(file.url),
            baseUrl: file.url,
          },
          { zip: this.#limits.zip, openapi: this.#limits.openapi, signal },
        );
        documents.push(...part.documents);
        skipped.push(...part.skipped);
        for (const link of part.links) {
          if (!seen.has(link) && crawlable(start, link)) {
            seen.add(link);
            queue.push(link);
          }
        }
      } catch (error) {
        // The documentation URL itself must work; a broken page it links to is only noted.
        if (first) throw error;
        skipped.push({ source: displayUrl(url), reason: (error as Error).message.slice(0, 500) });
      }
    }
    if (queue.length > 0) {
      skipped.push({
        source: `${queue.length} more linked page(s)`,
        reason: `the crawl stops after ${this.#limits.maxPages} pages (${SETTINGS.tree.documentation.maxPages.name})`,
      });
    }
    return { documents, skipped, truncated: false };
  }

  /**
   * A GraphQL endpoint's schema, by the introspection query. The system's credentials go with it only when
   * the endpoint is one of the system's origins, as a step's would; an answer of errors without data
   * (introspection turned off, a refused token) fails the processing with the errors' messages.
   */
  async #introspect(
    system: ResolvedSystem,
    endpoint: string,
    fetcher: Fetcher,
  ): Promise<DocumentationSummary> {
    const { introspectionQuery, shapeIntrospection } = await loadGraphqlSchema();
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: GRAPHQL_ACCEPT };
    const query: Array<[string, string]> = [];
    const origin = originOf(endpoint);
    if (origin !== undefined && systemOrigins(system).has(origin)) {
      applySystemAuth(system, system.credentials, headers, query);
    }
    const url = new URL(endpoint);
    for (const [name, value] of query) url.searchParams.append(name, value);
    const file = await fetcher.fetch(url.toString(), this.#limits.maxBytes, {
      headers,
      body: JSON.stringify({ query: await introspectionQuery() }),
    });
    let answer: JsonValue;
    try {
      answer = JSON.parse(new TextDecoder().decode(file.bytes)) as JsonValue;
    } catch {
      throw new SettledFailure(`${displayUrl(endpoint)} did not answer the introspection query with JSON`);
    }
    let data: JsonValue;
    try {
      data = graphqlData(answer, () => {});
    } catch (error) {
      throw new SettledFailure(
        `introspection of ${displayUrl(endpoint)} failed: ${(error as Error).message}`,
      );
    }
    const document = shapeIntrospection({ data }, displayUrl(endpoint), displayUrl(endpoint));
    return { documents: [document], skipped: [], truncated: false };
  }

  /** The schema, read with the system's own credentials in read-only transactions with the time limit. */
  async #readSchema(
    dialect: SchemaDialect,
    system: ResolvedSystem,
    guard: EgressGuard,
    signal: AbortSignal,
  ): Promise<DocumentationSummary> {
    const credentialUrl = system.credentials.url;
    const url = schemaDialect(credentialUrl) === dialect ? (credentialUrl as string) : system.url;
    if (!url || schemaDialect(url) !== dialect) {
      throw new Error(`the system has no ${dialect}:// URL to read a schema from`);
    }
    const document = await readDatabaseSchema(dialect, {
      url,
      credentials: system.credentials,
      signal,
      deadline: Date.now() + Math.min(SCHEMA_TIMEOUT_MS, this.#limits.timeoutMs),
      egress: guard,
    });
    return { documents: [document], skipped: [], truncated: false };
  }
}

/**
 * A failure the next attempt may not meet: the site's network error or 5xx, the database unreachable
 * (the step errors are matched by name: their clients load only with the first schema to read). A refusal of
 * the egress guard is no such failure: the guard decides the same every time.
 */
function mayPass(error: unknown): boolean {
  if (error instanceof DocumentationFetchError) return error.retryable;
  const { name, kind, code } = error as { name?: unknown; kind?: unknown; code?: unknown };
  return (
    (name === 'PostgresStepError' || name === 'MysqlStepError') &&
    kind === 'connection' &&
    code !== EGRESS_REFUSED_CODE
  );
}

function variantName(key: DocumentationKey): string {
  return `${key.systemId}\u0000${key.environment}`;
}

function parsePlacement(text: string | undefined): DocumentedPlacement | undefined {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as DocumentedPlacement;
  } catch {
    return undefined;
  }
}

/** Explicit credentials first, then the documentation, then the default (`Authorization: Bearer`). */
export function decidePlacement(
  credentialKeys: readonly string[],
  documented: DocumentedPlacement | undefined,
): ApiKeyPlacementDecision {
  if (credentialKeys.includes('apiKeyHeader')) return { in: 'header', source: 'credentials' };
  if (credentialKeys.includes('apiKeyQueryParam')) return { in: 'query', source: 'credentials' };
  if (documented) return { ...documented.placement, source: 'documentation', detail: documented.source };
  return { in: 'header', name: 'Authorization', prefix: 'Bearer ', source: 'default' };
}
