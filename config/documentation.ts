import { z } from 'zod';
import { formatIssues } from '../contract/format-issues.ts';
import type { OpenApiLimits } from '../systems/documentation/parsers/openapi-thread.ts';
import type { ZipLimits } from '../systems/documentation/parsers/zip.ts';

/** Bounds of documentation processing, from `KUBEGLUE_DOCS_*` (README: "Documentation processing"). */
export interface DocumentationLimits {
  /** One fetched file or one upload, in bytes. */
  maxBytes: number;
  /** Pages of one doc site crawl (the first URL included). */
  maxPages: number;
  /** Bytes fetched by one crawl in total. */
  maxTotalBytes: number;
  /** One processing, fetches and parsing included. */
  timeoutMs: number;
  /** Characters of JSON kept as the summary. */
  maxRetainedChars: number;
  zip: ZipLimits;
  openapi: OpenApiLimits;
}

const positiveInt = z.coerce.number().int().positive();

const DocsEnv = z.object({
  KUBEGLUE_DOCS_MAX_BYTES: positiveInt.default(20 * 1024 * 1024),
  KUBEGLUE_DOCS_MAX_PAGES: positiveInt.default(20),
  KUBEGLUE_DOCS_MAX_TOTAL_BYTES: positiveInt.default(100 * 1024 * 1024),
  KUBEGLUE_DOCS_TIMEOUT_MS: positiveInt.default(120_000),
  KUBEGLUE_DOCS_MAX_RETAINED_CHARS: positiveInt.default(2_000_000),
  KUBEGLUE_DOCS_ZIP_MAX_ENTRIES: positiveInt.default(1000),
  KUBEGLUE_DOCS_ZIP_MAX_BYTES: positiveInt.default(100 * 1024 * 1024),
  KUBEGLUE_DOCS_ZIP_MAX_RATIO: positiveInt.default(100),
  KUBEGLUE_DOCS_OPENAPI_MAX_EXPANDED_BYTES: positiveInt.default(16 * 1024 * 1024),
  KUBEGLUE_DOCS_OPENAPI_MAX_DEPTH: positiveInt.default(128),
  KUBEGLUE_DOCS_OPENAPI_TIMEOUT_MS: positiveInt.default(30_000),
  KUBEGLUE_DOCS_OPENAPI_MEMORY_MB: positiveInt.default(512),
});

export function documentationLimitsFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): DocumentationLimits {
  const parsed = DocsEnv.safeParse(env);
  if (!parsed.success) throw new Error(`invalid configuration: ${formatIssues(parsed.error)}`);
  const c = parsed.data;
  return {
    maxBytes: c.KUBEGLUE_DOCS_MAX_BYTES,
    maxPages: c.KUBEGLUE_DOCS_MAX_PAGES,
    maxTotalBytes: c.KUBEGLUE_DOCS_MAX_TOTAL_BYTES,
    timeoutMs: c.KUBEGLUE_DOCS_TIMEOUT_MS,
    maxRetainedChars: c.KUBEGLUE_DOCS_MAX_RETAINED_CHARS,
    zip: {
      maxEntries: c.KUBEGLUE_DOCS_ZIP_MAX_ENTRIES,
      maxTotalBytes: c.KUBEGLUE_DOCS_ZIP_MAX_BYTES,
      maxRatio: c.KUBEGLUE_DOCS_ZIP_MAX_RATIO,
    },
    openapi: {
      maxExpandedBytes: c.KUBEGLUE_DOCS_OPENAPI_MAX_EXPANDED_BYTES,
      maxDepth: c.KUBEGLUE_DOCS_OPENAPI_MAX_DEPTH,
      timeoutMs: c.KUBEGLUE_DOCS_OPENAPI_TIMEOUT_MS,
      memoryMb: c.KUBEGLUE_DOCS_OPENAPI_MEMORY_MB,
    },
  };
}
