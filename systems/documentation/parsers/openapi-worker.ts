/**
 * The worker thread of openapi-thread.ts: parses one document, posts its summary, then measures what
 * dereferencing would make of it and validates it (swagger-parser dereferences) only within the bounds.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { DOCUMENTATION } from '../../../config/documentation.ts';
import { type Expansion, measureExpansion, parseOpenApiText, summariseOpenApiDocument } from './openapi.ts';
import type { FromOpenApiWorker, OpenApiJob } from './openapi-thread.ts';

const job = workerData as OpenApiJob;
/** The settings of the bounds, by name (only the documentation section of the registry: this is a thread). */
const BOUNDS = DOCUMENTATION.settings.documentation.openapi;
const post = (message: FromOpenApiWorker) => parentPort?.postMessage(message);

/** `about 44.2 MB`, `about 88.5 TB`. */
function sizeText(bytes: number): string {
  const units = ['MB', 'GB', 'TB', 'PB'];
  let value = bytes / (1024 * 1024);
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return Number.isFinite(value) ? `about ${value.toFixed(1)} ${units[unit]}` : 'more than can be counted';
}

/** Why the document must not be dereferenced, or undefined when it may. */
function pastBounds(api: Record<string, unknown>): string | undefined {
  const { maxDepth, maxExpandedBytes } = job.bounds;
  let expansion: Expansion;
  try {
    expansion = measureExpansion(api);
  } catch (error) {
    // Deeper than the stack: deeper than any bound.
    if (!(error instanceof RangeError)) throw error;
    expansion = { bytes: 0, depth: Number.POSITIVE_INFINITY };
  }
  if (expansion.depth > maxDepth) {
    const depth = Number.isFinite(expansion.depth) ? `${expansion.depth} levels` : 'too many levels';
    return `its $refs expanded would nest ${depth} deep, beyond the bound of ${maxDepth} (${BOUNDS.maxDepth.name})`;
  }
  if (expansion.bytes > maxExpandedBytes)
    return (
      `its $refs expanded would make ${sizeText(expansion.bytes)} of JSON, beyond the bound of ` +
      `${maxExpandedBytes} bytes (${BOUNDS.maxExpandedBytes.name})`
    );
  return undefined;
}

async function validate(
  api: Record<string, unknown>,
): Promise<Omit<FromOpenApiWorker & { type: 'validated' }, 'type'>> {
  const reason = pastBounds(api);
  if (reason)
    return { validationSkipped: `not validated: ${reason}; the summary does not need them expanded` };
  const { default: SwaggerParser } = await import('@apidevtools/swagger-parser');
  try {
    await SwaggerParser.validate(api as never, {
      resolve: { external: false },
      dereference: { circular: 'ignore' },
    });
    return {};
  } catch (error) {
    return { validationError: (error as Error).message.slice(0, 1000) };
  }
}

const api = parseOpenApiText(job.text);
if (!api) {
  post({ type: 'not-openapi' });
} else {
  post({ type: 'summary', document: summariseOpenApiDocument(api, job.source) });
  post({ type: 'validated', ...(await validate(api)) });
}
