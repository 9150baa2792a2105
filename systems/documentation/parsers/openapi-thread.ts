/**
 * OpenAPI documents are parsed, summarised and validated in a worker thread (openapi-worker.ts), one per
 * document, never on the event loop that answers the API: a document can be cheap to send and expensive to
 * expand (docs/system-documentation.md). The worker has its own heap limit and a time limit; what it
 * does past them is dropped, and the message names the setting that bounds it.
 */
import { Worker } from 'node:worker_threads';
import { type DocumentationLimits, SETTINGS } from '../../../config/config.ts';
import type { OpenApiDocument } from './summary.ts';

/**
 * KUBEGLUE_DOCS_OPENAPI_* (config/documentation.ts): validation is skipped when the document with its
 * `$ref`s expanded would be larger (JSON characters) or nest deeper; the worker is stopped after its time
 * limit and has its own heap limit.
 */
export type OpenApiLimits = DocumentationLimits['openapi'];

export interface OpenApiJob {
  text: string;
  source: string;
  bounds: Pick<OpenApiLimits, 'maxExpandedBytes' | 'maxDepth'>;
}

export type FromOpenApiWorker =
  | { type: 'not-openapi' }
  /** Sent before validation starts, so a validation stopped by a limit still leaves the summary. */
  | { type: 'summary'; document: OpenApiDocument }
  | { type: 'validated'; validationError?: string; validationSkipped?: string };

/** The worker could not even summarise the document within the limits. */
export class OpenApiLimitError extends Error {
  override name = 'OpenApiLimitError';
}

// Compiled (dist/) or from source: the worker is the same kind of file as this module.
const WORKER = import.meta.url.endsWith('.ts')
  ? new URL('./openapi-worker.ts', import.meta.url)
  : new URL('openapi-worker.js', import.meta.url);

/**
 * The document's summary, validated when that stays within the bounds; undefined when the text is no
 * OpenAPI or Swagger document after all. Rejects when the signal aborts, and with OpenApiLimitError when
 * not even the summary was made within the time or memory limit.
 */
export function summariseOpenApiInWorker(
  text: string,
  source: string,
  limits: OpenApiLimits,
  signal?: AbortSignal,
): Promise<OpenApiDocument | undefined> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const job: OpenApiJob = {
      text,
      source,
      bounds: { maxExpandedBytes: limits.maxExpandedBytes, maxDepth: limits.maxDepth },
    };
    const worker = new Worker(WORKER, {
      workerData: job,
      resourceLimits: {
        maxOldGenerationSizeMb: limits.memoryMb,
        maxYoungGenerationSizeMb: Math.min(64, Math.max(8, Math.floor(limits.memoryMb / 8))),
      },
    });
    let summary: OpenApiDocument | undefined;
    let settled = false;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      worker.removeAllListeners('message');
      // terminate() ends a worker whatever it runs; its error event (if any) has nobody left to tell.
      worker.on('error', () => {});
      void worker.terminate();
      outcome();
    };
    /** A limit stopped the worker: keep the summary if it was made, with the reason it was not validated. */
    const stopped = (reason: string) =>
      finish(() => {
        if (summary) resolve({ ...summary, validationSkipped: `not validated: ${reason}` });
        else
          reject(new OpenApiLimitError(`the OpenAPI document ${source} could not be processed: ${reason}`));
      });
    const timer = setTimeout(
      () =>
        stopped(
          `processing ran past the time limit of ${limits.timeoutMs} ms (${SETTINGS.tree.documentation.openapi.timeoutMs.name})`,
        ),
      limits.timeoutMs,
    );
    const onAbort = () => finish(() => reject(signal?.reason));
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (message: FromOpenApiWorker) => {
      if (message.type === 'not-openapi') finish(() => resolve(undefined));
      else if (message.type === 'summary') summary = message.document;
      else if (summary) {
        const done = { ...summary, ...withoutUndefined(message) };
        finish(() => resolve(done));
      }
    });
    worker.on('error', (error: Error & { code?: string }) =>
      stopped(
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? `processing needed more than ${limits.memoryMb} MB (${SETTINGS.tree.documentation.openapi.memoryMb.name})`
          : `processing failed: ${error.message}`,
      ),
    );
    worker.on('exit', (code) => stopped(`the worker stopped (exit code ${code})`));
  });
}

function withoutUndefined(message: { validationError?: string; validationSkipped?: string }) {
  return {
    ...(message.validationError !== undefined ? { validationError: message.validationError } : {}),
    ...(message.validationSkipped !== undefined ? { validationSkipped: message.validationSkipped } : {}),
  };
}
