import type { JsonValue } from '../contract/json.ts';
import { isFileRef } from './file-ref.ts';
import { mediaTypeByName } from './media-type.ts';
import type { Redactor } from './redact.ts';
import type { ProducedFile } from './types.ts';

const FILES_KEY = '__files__';
const FILE_KEY_PATTERN = /^[^/\\\0]{1,255}$/;

function contentTypeFor(filename: string): string {
  return mediaTypeByName(filename) || 'application/octet-stream';
}

function fileFrom(fileKey: string, entry: JsonValue): ProducedFile {
  if (!FILE_KEY_PATTERN.test(fileKey) || fileKey === '.' || fileKey === '..') {
    throw new Error(`__files__ key '${fileKey}' is not a valid file name`);
  }
  if (isFileRef(entry)) {
    return {
      fileKey,
      filename: fileKey,
      contentType: entry.contentType,
      size: entry.size,
      contentBase64: entry.contentBase64,
    };
  }
  let bytes: Buffer;
  let contentType = contentTypeFor(fileKey);
  if (typeof entry === 'string') {
    bytes = Buffer.from(entry, 'utf8');
  } else if (entry && typeof entry === 'object' && !Array.isArray(entry) && 'content' in entry) {
    const { content, contentType: declared, encoding } = entry;
    if (encoding !== undefined && encoding !== 'utf8' && encoding !== 'base64') {
      throw new Error(`__files__['${fileKey}'].encoding must be "utf8" or "base64"`);
    }
    const text = typeof content === 'string' ? content : JSON.stringify(content);
    bytes = encoding === 'base64' ? Buffer.from(text, 'base64') : Buffer.from(text, 'utf8');
    if (typeof declared === 'string' && declared) contentType = declared;
  } else {
    throw new Error(`__files__['${fileKey}'] must be a string or an object with content`);
  }
  return {
    fileKey,
    filename: fileKey,
    contentType,
    size: bytes.byteLength,
    contentBase64: bytes.toString('base64'),
  };
}

/** Splits `__files__` off the run's data into file artifacts (semantics.md, "Transforms"). */
export function extractFiles(data: JsonValue): { data: JsonValue; files: ProducedFile[] } {
  if (!data || typeof data !== 'object' || Array.isArray(data) || !(FILES_KEY in data))
    return { data, files: [] };
  const { [FILES_KEY]: entries, ...rest } = data;
  if (!entries || typeof entries !== 'object' || Array.isArray(entries)) {
    throw new Error('__files__ must be an object mapping file names to contents');
  }
  const files = Object.entries(entries).map(([key, entry]) => fileFrom(key, entry));
  return { data: rest, files };
}

/**
 * File artifacts with credential values replaced: in the file key and name, and in the content when it
 * is text (through the same file-reference scrubbing step data gets). Binary content is left as it is.
 */
export function redactFiles(files: ProducedFile[], redactor: Redactor): ProducedFile[] {
  if (redactor.size === 0) return files;
  return files.map((file) => {
    const ref = redactor.value({
      __file__: true,
      filename: file.filename,
      contentType: file.contentType,
      size: file.size,
      contentBase64: file.contentBase64,
    });
    return {
      fileKey: redactor.string(file.fileKey),
      filename: String(ref.filename),
      contentType: String(ref.contentType),
      size: Number(ref.size),
      contentBase64: String(ref.contentBase64),
    };
  });
}
