/**
 * Zip archives unpacked with limits against zip bombs: entry count, size of each entry, total unpacked size
 * and the ratio of unpacked to packed bytes, all counted on the bytes actually inflated (the sizes an archive
 * declares can lie). Nested archives are not opened. Pure; fflate's streaming unzip.
 */
import { Unzip, type UnzipFile, UnzipInflate } from 'fflate';
import type { DocumentationLimits } from '../../../config/config.ts';

/**
 * KUBEGLUE_DOCS_ZIP_*: entries, total unpacked bytes, and unpacked bytes per archive byte above which the
 * archive is refused as a likely bomb (config/documentation.ts).
 */
export type ZipLimits = DocumentationLimits['zip'];

export interface ZipEntry {
  name: string;
  bytes: Uint8Array;
}

/** The archive was refused; the message says which limit and which entry. */
export class ZipRefusedError extends Error {
  override name = 'ZipRefusedError';
}

/** Below this many unpacked bytes the ratio is not judged: tiny archives of text compress well. */
const RATIO_FLOOR_BYTES = 1024 * 1024;

export function unzipEntries(archive: Uint8Array, limits: ZipLimits): ZipEntry[] {
  const entries: ZipEntry[] = [];
  let total = 0;
  let count = 0;
  let refusal: ZipRefusedError | undefined;
  const maxBytes = Math.min(
    limits.maxTotalBytes,
    Math.max(RATIO_FLOOR_BYTES, archive.length * limits.maxRatio),
  );
  const refuse = (file: UnzipFile, message: string) => {
    refusal ??= new ZipRefusedError(`zip refused (zip bomb protection): ${message}`);
    file.terminate();
  };

  const unzip = new Unzip((file) => {
    if (refusal) return;
    count += 1;
    if (count > limits.maxEntries) {
      refuse(file, `more than ${limits.maxEntries} entries`);
      return;
    }
    if (file.name.endsWith('/')) return;
    if (file.originalSize !== undefined && total + file.originalSize > maxBytes) {
      refuse(
        file,
        `entry ${file.name} declares ${file.originalSize} bytes, beyond the limit (${describe(maxBytes, limits)})`,
      );
      return;
    }
    const chunks: Uint8Array[] = [];
    file.ondata = (error, chunk, final) => {
      if (refusal) return;
      if (error) {
        refusal = new ZipRefusedError(`zip entry ${file.name} could not be unpacked: ${error.message}`);
        return;
      }
      total += chunk.length;
      if (total > maxBytes) {
        refuse(file, `entry ${file.name} unpacks beyond the limit (${describe(maxBytes, limits)})`);
        return;
      }
      chunks.push(chunk);
      if (final) entries.push({ name: file.name, bytes: concat(chunks) });
    };
    file.start();
  });
  unzip.register(UnzipInflate);
  // Fed in slices so a refusal stops the inflating early instead of after the whole archive.
  const SLICE = 64 * 1024;
  for (let offset = 0; offset < archive.length && !refusal; offset += SLICE) {
    unzip.push(archive.subarray(offset, offset + SLICE), offset + SLICE >= archive.length);
  }
  if (refusal) throw refusal;
  return entries;
}

function describe(maxBytes: number, limits: ZipLimits): string {
  return maxBytes < limits.maxTotalBytes
    ? `${limits.maxRatio}× the archive's ${Math.round(maxBytes / limits.maxRatio)} bytes`
    : `${limits.maxTotalBytes} bytes in total`;
}

function concat(chunks: Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const length = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  const out = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}
