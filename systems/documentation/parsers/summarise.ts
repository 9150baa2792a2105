/**
 * One fetched or uploaded file → the documents it holds. Dispatches on the detected format; a zip is
 * unpacked (with its limits) and each entry summarised on its own. Free of I/O: bytes in, summaries out.
 */
import { detectFormat } from './detect.ts';
import { isIntrospectionAnswer, shapeIntrospection, shapeSdl } from './graphql-schema.ts';
import { parseHtml } from './html.ts';
import { looksLikeOpenApi } from './openapi.ts';
import { type OpenApiLimits, summariseOpenApiInWorker } from './openapi-thread.ts';
import { parsePdf } from './pdf.ts';
import type { DocumentationSummary, SkippedPart, SummaryDocument } from './summary.ts';
import { parseMarkdown, parsePlainText } from './text.ts';
import { unzipEntries, type ZipLimits } from './zip.ts';

export interface FileInput {
  bytes: Uint8Array;
  /** File name or URL: its extension helps detection. */
  name: string;
  contentType?: string | undefined;
  /** Where it came from, as shown in the summary. */
  source: string;
  /** For HTML: the page's URL, against which its links resolve. */
  baseUrl?: string | undefined;
}

export interface FileSummary {
  documents: SummaryDocument[];
  skipped: SkippedPart[];
  /** Links of HTML pages (absolute URLs), for a crawl. */
  links: string[];
}

const decoder = new TextDecoder('utf-8');

export interface SummariseOptions {
  zip: ZipLimits;
  openapi: OpenApiLimits;
  /** The processing's deadline (and shutdown): an OpenAPI worker under way is stopped. */
  signal?: AbortSignal | undefined;
}

export async function summariseFile(
  input: FileInput,
  options: SummariseOptions,
  nested = false,
): Promise<FileSummary> {
  const format = detectFormat(input.bytes, input.name, input.contentType);
  switch (format) {
    case 'pdf':
      return { documents: [await parsePdf(input.bytes, input.source)], skipped: [], links: [] };
    case 'zip': {
      if (nested)
        return {
          documents: [],
          skipped: [{ source: input.source, reason: 'nested archives are not opened' }],
          links: [],
        };
      const result: FileSummary = { documents: [], skipped: [], links: [] };
      for (const entry of unzipEntries(input.bytes, options.zip)) {
        const source = `${input.source}!/${entry.name}`;
        try {
          const part = await summariseFile({ bytes: entry.bytes, name: entry.name, source }, options, true);
          result.documents.push(...part.documents);
          result.skipped.push(...part.skipped);
        } catch (error) {
          result.skipped.push({ source, reason: (error as Error).message.slice(0, 500) });
        }
      }
      return result;
    }
    case 'html': {
      const parsed = parseHtml(decoder.decode(input.bytes), input.source, input.baseUrl);
      return { documents: [parsed.document], skipped: [], links: parsed.links };
    }
    case 'markdown':
      return {
        documents: [parseMarkdown(decoder.decode(input.bytes), input.source)],
        skipped: [],
        links: [],
      };
    case 'graphql':
      return {
        documents: [await shapeSdl(decoder.decode(input.bytes), input.source)],
        skipped: [],
        links: [],
      };
    case 'openapi-or-text': {
      const text = decoder.decode(input.bytes);
      const introspected = introspectionIn(text);
      if (introspected !== undefined) {
        return { documents: [shapeIntrospection(introspected, input.source)], skipped: [], links: [] };
      }
      const api = looksLikeOpenApi(text)
        ? await summariseOpenApiInWorker(text, input.source, options.openapi, options.signal)
        : undefined;
      if (api) return { documents: [api], skipped: [], links: [] };
      return { documents: [parsePlainText(text, input.source)], skipped: [], links: [] };
    }
    case 'binary':
      return {
        documents: [],
        skipped: [
          {
            source: input.source,
            reason: 'not a supported format (OpenAPI, GraphQL, HTML, PDF, zip, Markdown, text)',
          },
        ],
        links: [],
      };
  }
}

/** A saved introspection answer (JSON with `__schema`), parsed; undefined for any other text. */
function introspectionIn(text: string): unknown {
  if (!text.trimStart().startsWith('{') || !text.includes('"__schema"')) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return isIntrospectionAnswer(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Cuts the summary to about `maxChars` characters of JSON: documents are kept in order while they fit; the
 * first that does not is cut section by section (operations, tables), the rest dropped.
 */
export function limitRetained(summary: DocumentationSummary, maxChars: number): DocumentationSummary {
  let used = 0;
  const documents: SummaryDocument[] = [];
  let truncated = summary.truncated;
  for (const document of summary.documents) {
    const size = JSON.stringify(document).length;
    if (used + size <= maxChars) {
      documents.push(document);
      used += size;
      continue;
    }
    truncated = true;
    const room = maxChars - used;
    if (room > 1000) documents.push(cutDocument(document, room));
    break;
  }
  return { ...summary, documents, truncated };
}

function fitting<T>(items: T[], room: number): T[] {
  const kept: T[] = [];
  let used = 0;
  for (const item of items) {
    used += JSON.stringify(item).length + 1;
    if (used > room) break;
    kept.push(item);
  }
  return kept;
}

function cutDocument(document: SummaryDocument, room: number): SummaryDocument {
  const budget = room - 500;
  switch (document.kind) {
    case 'openapi':
      return {
        ...document,
        operations: fitting(document.operations, budget - JSON.stringify(document.securitySchemes).length),
      };
    case 'text':
      return { ...document, sections: fitting(document.sections, budget) };
    case 'postgres-schema':
    case 'mysql-schema':
      return { ...document, tables: fitting(document.tables, budget), views: [] };
    case 'graphql-schema': {
      const operations = fitting(document.operations, budget);
      const left = budget - JSON.stringify(operations).length;
      return { ...document, operations, types: fitting(document.types, left) };
    }
  }
}
