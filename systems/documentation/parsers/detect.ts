/** Which parser a fetched or uploaded file needs: from its first bytes, then its content type and name. Pure. */

export type DetectedFormat = 'pdf' | 'zip' | 'html' | 'markdown' | 'graphql' | 'openapi-or-text' | 'binary';

function extension(name: string): string {
  const path = name.split(/[?#]/)[0] ?? '';
  const dot = path.lastIndexOf('.');
  return dot >= 0 && dot > path.lastIndexOf('/') ? path.slice(dot + 1).toLowerCase() : '';
}

function startsWith(bytes: Uint8Array, signature: number[]): boolean {
  return signature.every((byte, index) => bytes[index] === byte);
}

/** Text whose first 8 KiB hold a NUL byte is binary, whatever its name says. */
function looksBinary(bytes: Uint8Array): boolean {
  return bytes.subarray(0, 8192).includes(0);
}

export function detectFormat(
  bytes: Uint8Array,
  name: string,
  contentType: string | undefined,
): DetectedFormat {
  if (startsWith(bytes, [0x25, 0x50, 0x44, 0x46, 0x2d])) return 'pdf'; // %PDF-
  if (startsWith(bytes, [0x50, 0x4b, 0x03, 0x04]) || startsWith(bytes, [0x50, 0x4b, 0x05, 0x06]))
    return 'zip';
  if (looksBinary(bytes)) return 'binary';
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const ext = extension(name);
  if (type === 'text/html' || type === 'application/xhtml+xml' || ext === 'html' || ext === 'htm')
    return 'html';
  if (type === 'text/markdown' || ext === 'md' || ext === 'markdown') return 'markdown';
  // GraphQL schema language; an introspection answer is JSON, recognised by its content.
  if (type === 'application/graphql' || ext === 'graphql' || ext === 'graphqls' || ext === 'gql')
    return 'graphql';
  const head = new TextDecoder().decode(bytes.subarray(0, 1024)).trimStart().toLowerCase();
  if (head.startsWith('<!doctype html') || head.startsWith('<html')) return 'html';
  return 'openapi-or-text';
}
