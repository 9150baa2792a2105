/**
 * How binary content (an HTTP attachment, a downloaded FTP/SFTP file) travels through a run:
 * as a JSON value, so it can cross the worker IPC boundary and sit in a step envelope.
 * `__file__` marks the object so transforms and the engine can recognise it.
 */
export interface FileRef {
  __file__: true;
  filename: string;
  contentType: string;
  size: number;
  contentBase64: string;
}

export function fileRefFromBytes(bytes: Uint8Array, filename: string, contentType: string): FileRef {
  return {
    __file__: true,
    filename,
    contentType,
    size: bytes.byteLength,
    contentBase64: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
  };
}

export function isFileRef(value: unknown): value is FileRef {
  return typeof value === 'object' && value !== null && (value as { __file__?: unknown }).__file__ === true;
}

export function fileRefBytes(ref: FileRef): Buffer {
  return Buffer.from(ref.contentBase64, 'base64');
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A file's bytes as text when they are valid UTF-8 without NUL bytes; null means binary. A UTF-8 BOM is dropped. */
export function fileText(bytes: Uint8Array): string | null {
  if (bytes.includes(0)) return null;
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}
