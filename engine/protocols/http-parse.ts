/**
 * Turns an HTTP response body into the step's data: parsed JSON, XML (as an object), CSV (row
 * objects), text, or a file reference for binary content. Pure.
 */
import type { JsonObject, JsonValue } from '../../contract/json.ts';
import { type FileRef, fileRefFromBytes } from '../file-ref.ts';
import { lazyRequire } from '../lazy-require.ts';
import { mediaTypeByName } from '../media-type.ts';

const loadCsv = lazyRequire<typeof import('csv-parse/sync')>('csv-parse/sync');
const loadXml = lazyRequire<typeof import('fast-xml-parser')>('fast-xml-parser');

export interface ResponseBodyInput {
  body: Uint8Array;
  /** The raw Content-Type header, if any. */
  contentType?: string | undefined;
  /** The raw Content-Disposition header, if any. */
  contentDisposition?: string | undefined;
  /** The request URL, for a download's fallback filename. */
  url: string;
}

type BodyKind = 'json' | 'xml' | 'csv' | 'tsv' | 'text' | 'plain' | 'binary' | 'unknown';

const BINARY_TOP_LEVEL = new Set(['image', 'audio', 'video', 'font', 'model']);
const BINARY_APPLICATION = new Set([
  'octet-stream',
  'pdf',
  'zip',
  'gzip',
  'x-gzip',
  'x-tar',
  'x-bzip2',
  'x-xz',
  'x-7z-compressed',
  'x-rar-compressed',
  'vnd.rar',
  'msword',
  'java-archive',
  'wasm',
  'protobuf',
  'x-protobuf',
  'vnd.google.protobuf',
  'x-msdownload',
  'vnd.sqlite3',
  'x-sqlite3',
  'postscript',
]);
const BINARY_APPLICATION_PREFIXES = [
  'vnd.ms-',
  'vnd.openxmlformats-',
  'vnd.oasis.opendocument.',
  'vnd.apple.',
];
const TEXT_APPLICATION = new Set([
  'javascript',
  'ecmascript',
  'x-javascript',
  'x-www-form-urlencoded',
  'yaml',
  'x-yaml',
  'graphql',
  'sql',
  'x-sh',
  'x-ndjson',
  'jsonl',
  'json-seq',
  'rtf',
]);

export interface MediaType {
  /** `type/subtype`, lower-case, without parameters; '' when absent. */
  essence: string;
  charset: string | undefined;
}

export function parseMediaType(header: string | undefined): MediaType {
  if (header === undefined) return { essence: '', charset: undefined };
  const [essence = '', ...params] = header.split(';');
  let charset: string | undefined;
  for (const param of params) {
    const match = /^\s*charset\s*=\s*"?([^";\s]+)"?\s*$/i.exec(param);
    if (match) charset = match[1]?.toLowerCase();
  }
  return { essence: essence.trim().toLowerCase(), charset };
}

function kindOf(essence: string): BodyKind {
  if (essence === '') return 'unknown';
  const [type = '', subtype = ''] = essence.split('/');
  if (BINARY_TOP_LEVEL.has(type)) return 'binary';
  if (essence === 'application/json' || essence === 'text/json' || subtype.endsWith('+json')) return 'json';
  if (essence === 'text/csv' || essence === 'application/csv') return 'csv';
  if (essence === 'text/tab-separated-values') return 'tsv';
  if (essence === 'application/xml' || essence === 'text/xml' || subtype.endsWith('+xml')) return 'xml';
  if (essence === 'text/plain') return 'plain';
  if (type === 'text') return 'text';
  if (type === 'application') {
    if (TEXT_APPLICATION.has(subtype)) return 'text';
    if (BINARY_APPLICATION.has(subtype)) return 'binary';
    if (BINARY_APPLICATION_PREFIXES.some((prefix) => subtype.startsWith(prefix))) return 'binary';
  }
  return 'unknown';
}

function isAttachment(disposition: string | undefined): boolean {
  return disposition !== undefined && /^\s*attachment\s*(;|$)/i.test(disposition);
}

/** Bytes that decode as UTF-8 and contain no NUL are treated as text when the type says nothing. */
function looksLikeText(bytes: Uint8Array): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

function decodeText(bytes: Uint8Array, charset: string | undefined): string {
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(bytes);
  } catch {
    // An unknown charset label: UTF-8 is the best remaining guess.
    return new TextDecoder('utf-8').decode(bytes);
  }
}

function tryJson(text: string): { ok: true; value: JsonValue } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as JsonValue };
  } catch {
    return { ok: false };
  }
}

let xmlParser: import('fast-xml-parser').XMLParser | undefined;
const xmlParserOptions = {
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  textNodeName: '#text',
  // Keep values as strings: "007" or "1e3" must not silently become numbers.
  parseTagValue: false,
  parseAttributeValue: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
};

function tryXml(text: string): { ok: true; value: JsonValue } | { ok: false } {
  const { XMLParser, XMLValidator } = loadXml();
  if (XMLValidator.validate(text) !== true) return { ok: false };
  try {
    xmlParser ??= new XMLParser(xmlParserOptions);
    return { ok: true, value: xmlParser.parse(text) as JsonValue };
  } catch {
    return { ok: false };
  }
}

/** Picks `,`, `;` or tab, whichever occurs most often outside quotes in the header line. */
function detectDelimiter(text: string): string {
  const counts = new Map<string, number>([
    [',', 0],
    [';', 0],
    ['\t', 0],
  ]);
  let quoted = false;
  for (const char of text) {
    if (char === '"') quoted = !quoted;
    else if (!quoted && (char === '\n' || char === '\r')) break;
    else if (!quoted && counts.has(char)) counts.set(char, (counts.get(char) ?? 0) + 1);
  }
  let best = ',';
  for (const [delimiter, count] of counts) if (count > (counts.get(best) ?? 0)) best = delimiter;
  return best;
}

function tryCsv(text: string, delimiter: string): { ok: true; value: JsonValue } | { ok: false } {
  try {
    const rows = loadCsv().parse(text, {
      columns: true,
      delimiter,
      bom: true,
      skip_empty_lines: true,
      relax_column_count: true,
    }) as JsonObject[];
    return { ok: true, value: rows };
  } catch {
    return { ok: false };
  }
}

/** JSON when it looks like JSON and parses, XML when it starts with `<` and is well-formed, else the text. */
function sniff(text: string): JsonValue {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  const first = trimmed[0];
  if (first === '{' || first === '[' || first === '"' || /^(-?\d|true$|false$|null$)/.test(trimmed)) {
    const json = tryJson(trimmed);
    if (json.ok) return json.value;
  }
  if (first === '<') {
    const xml = tryXml(trimmed);
    if (xml.ok) return xml.value;
  }
  return text;
}

function filenameFromDisposition(disposition: string | undefined): string | undefined {
  if (disposition === undefined) return undefined;
  const extended = /filename\*\s*=\s*([^;]+)/i.exec(disposition);
  if (extended?.[1]) {
    const raw = extended[1].trim().replace(/^"(.*)"$/, '$1');
    const quote = raw.indexOf("''");
    const encoded = quote >= 0 ? raw.slice(quote + 2) : raw;
    try {
      return decodeURIComponent(encoded);
    } catch {
      // fall through to the plain parameter
    }
  }
  const plain = /(?:^|;)\s*filename\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)/i.exec(disposition);
  if (plain?.[1]) {
    const value = plain[1].trim();
    return value.startsWith('"') ? value.slice(1, -1).replace(/\\(.)/g, '$1') : value;
  }
  return undefined;
}

function filenameFromUrl(url: string): string | undefined {
  try {
    const segment = new URL(url).pathname.split('/').pop();
    return segment ? decodeURIComponent(segment) : undefined;
  } catch {
    return undefined;
  }
}

/** Only a base name: a server must not be able to name `../../etc/passwd`. */
function safeFilename(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  const last = name.split(/[/\\]/).pop() ?? '';
  const base = [...last]
    .filter((char) => char.charCodeAt(0) >= 0x20)
    .join('')
    .trim();
  if (base === '' || base === '.' || base === '..') return undefined;
  return base;
}

export function downloadFilename(input: Pick<ResponseBodyInput, 'contentDisposition' | 'url'>): string {
  return (
    safeFilename(filenameFromDisposition(input.contentDisposition)) ??
    safeFilename(filenameFromUrl(input.url)) ??
    'download'
  );
}

export function fileRefToJson(ref: FileRef): JsonObject {
  return { ...ref };
}

function asFile(input: ResponseBodyInput, essence: string): JsonObject {
  const filename = downloadFilename(input);
  const contentType = essence || mediaTypeByName(filename) || 'application/octet-stream';
  return fileRefToJson(fileRefFromBytes(input.body, filename, contentType));
}

export function parseResponseBody(input: ResponseBodyInput): JsonValue {
  const { essence, charset } = parseMediaType(input.contentType);
  const kind = kindOf(essence);
  if (isAttachment(input.contentDisposition)) return asFile(input, essence);
  if (input.body.byteLength === 0) return null;
  if (kind === 'binary') return asFile(input, essence);
  if (kind === 'unknown' && !looksLikeText(input.body)) return asFile(input, essence);

  const text = decodeText(input.body, charset);
  switch (kind) {
    case 'json': {
      if (text.trim() === '') return null;
      // A body labelled JSON that does not parse is kept as text rather than failing a 2xx response.
      const json = tryJson(text);
      return json.ok ? json.value : text;
    }
    case 'xml': {
      if (text.trim() === '') return null;
      const xml = tryXml(text);
      return xml.ok ? xml.value : text;
    }
    case 'csv':
    case 'tsv': {
      if (text.trim() === '') return [];
      const csv = tryCsv(text, kind === 'tsv' ? '\t' : detectDelimiter(text));
      return csv.ok ? csv.value : text;
    }
    case 'plain': {
      // Many APIs label JSON as text/plain; an object or array that parses is returned parsed.
      const trimmed = text.trim();
      if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
        const json = tryJson(trimmed);
        if (json.ok) return json.value;
      }
      return text;
    }
    case 'text':
      return text;
    default:
      return sniff(text);
  }
}
