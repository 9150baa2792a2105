/**
 * Fetching documentation: every connection through the egress guard (judged at connect time, each redirect
 * hop too), each response read as a stream and cut off at the size limit (never buffered whole), within the
 * processing's deadline. A doc site is crawled breadth-first over same-origin links, up to a page count.
 */

import { Agent, request } from 'undici';
import { SETTINGS } from '../../config/config.ts';
import { discardBody } from '../../engine/protocols/discard-body.ts';
import { type EgressGuard, egressRefusalIn } from '../../engine/protocols/egress-policy.ts';
import { egressConnector } from '../../engine/protocols/egress-socket.ts';

const MAX_REDIRECTS = 5;
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * A fetch that failed; the message names the URL without its query (which may carry a token). `retryable`:
 * the site may answer next time (a network error, a 5xx, 408, 429); the processing is tried again. A
 * refusal of the egress guard (a metadata address, a private one the deployment refuses) is not.
 */
export class DocumentationFetchError extends Error {
  override name = 'DocumentationFetchError';
  readonly retryable: boolean;

  constructor(message: string, options: { retryable?: boolean } = {}) {
    super(message);
    this.retryable = options.retryable ?? false;
  }
}

function retryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

export interface FetchedFile {
  url: string;
  bytes: Uint8Array;
  contentType: string | undefined;
}

export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '(an invalid URL)';
  }
}

/**
 * A POST instead of a GET (a GraphQL endpoint's introspection): its headers may carry the system's
 * credentials, so a redirect is not followed but fails, naming where it pointed.
 */
export interface PostRequest {
  headers: Record<string, string>;
  body: string;
}

export interface Fetcher {
  fetch(url: string, maxBytes: number, post?: PostRequest): Promise<FetchedFile>;
  close(): Promise<void>;
}

/** One dispatcher per processing: its guard carries the system's allowedNetworks. */
export function createFetcher(guard: EgressGuard, signal: AbortSignal): Fetcher {
  const dispatcher = new Agent({
    connect: egressConnector(guard, { timeoutMs: CONNECT_TIMEOUT_MS }),
    keepAliveTimeout: 5_000,
  });
  return {
    fetch: (url, maxBytes, post) => fetchOne(url, maxBytes, dispatcher, signal, post),
    close: () => dispatcher.destroy(),
  };
}

async function fetchOne(
  start: string,
  maxBytes: number,
  dispatcher: Agent,
  signal: AbortSignal,
  post?: PostRequest,
): Promise<FetchedFile> {
  let url = start;
  for (let hop = 0; ; hop++) {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new DocumentationFetchError(
        `documentation URL ${displayUrl(url)}: only http and https can be fetched`,
      );
    }
    // A fragment is never sent (`#graphql` is a hint to kubeglue only).
    parsed.hash = '';
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await request(parsed.toString(), {
        method: post ? 'POST' : 'GET',
        dispatcher,
        signal,
        headers: { accept: '*/*', 'user-agent': 'kubeglue-documentation', ...post?.headers },
        ...(post ? { body: post.body } : {}),
      });
    } catch (error) {
      if (signal.aborted)
        throw new DocumentationFetchError(
          `fetching ${displayUrl(url)} ran past the time limit (${SETTINGS.tree.documentation.timeoutMs.name})`,
        );
      // The guard decides the same next time: a refusal is final, never retried.
      const refusal = egressRefusalIn(error);
      if (refusal) throw new DocumentationFetchError(`fetching ${displayUrl(url)}: ${refusal.message}`);
      throw new DocumentationFetchError(`fetching ${displayUrl(url)} failed: ${(error as Error).message}`, {
        retryable: true,
      });
    }
    const { statusCode, headers, body } = response;
    if (statusCode >= 300 && statusCode < 400 && headers.location) {
      discardBody(body);
      if (post) {
        throw new DocumentationFetchError(
          `${displayUrl(url)} answered HTTP ${statusCode}, a redirect to ` +
            `${displayUrl(new URL(String(headers.location), url).toString())}: give that URL as the endpoint`,
        );
      }
      if (hop >= MAX_REDIRECTS)
        throw new DocumentationFetchError(
          `fetching ${displayUrl(start)}: more than ${MAX_REDIRECTS} redirects`,
        );
      url = new URL(String(headers.location), url).toString();
      continue;
    }
    if (statusCode < 200 || statusCode >= 300) {
      discardBody(body);
      throw new DocumentationFetchError(`fetching ${displayUrl(url)} answered HTTP ${statusCode}`, {
        retryable: retryableStatus(statusCode),
      });
    }
    const declared = Number(headers['content-length']);
    const tooLarge = () =>
      new DocumentationFetchError(
        `documentation at ${displayUrl(url)} is larger than the limit of ${maxBytes} bytes (${SETTINGS.tree.documentation.maxBytes.name}); ` +
          'the download was stopped',
      );
    if (Number.isFinite(declared) && declared > maxBytes) {
      discardBody(body);
      throw tooLarge();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of body) {
        size += (chunk as Buffer).length;
        if (size > maxBytes) {
          discardBody(body);
          throw tooLarge();
        }
        chunks.push(chunk as Buffer);
      }
    } catch (error) {
      if (error instanceof DocumentationFetchError) throw error;
      if (signal.aborted)
        throw new DocumentationFetchError(
          `fetching ${displayUrl(url)} ran past the time limit (${SETTINGS.tree.documentation.timeoutMs.name})`,
        );
      throw new DocumentationFetchError(`reading ${displayUrl(url)} failed: ${(error as Error).message}`, {
        retryable: true,
      });
    }
    const type = headers['content-type'];
    return { url, bytes: Buffer.concat(chunks), contentType: Array.isArray(type) ? type[0] : type };
  }
}

/** Links a crawl does not follow: assets, not documentation. */
const ASSET = /\.(png|jpe?g|gif|svg|ico|webp|css|js|mjs|map|woff2?|ttf|eot|mp4|mp3|webm)$/i;

/** Whether a crawl that started at `start` follows `link`: same origin, not an asset. */
export function crawlable(start: string, link: string): boolean {
  try {
    const target = new URL(link);
    return target.origin === new URL(start).origin && !ASSET.test(target.pathname);
  } catch {
    return false;
  }
}
