/**
 * Presigned download URLs for run file artifacts. A URL carries its expiry and an HMAC-SHA256 over
 * (runId, fileKey, expiry), so it works without an API key until it expires, and changing any part
 * of it invalidates it. Nothing is stored per URL: a fresh one can be minted at any time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { z } from 'zod';
import { KG_ERR_DOWNLOAD_LINK_EXPIRED, KG_ERR_DOWNLOAD_LINK_INVALID } from '../contract/api/errors.ts';
import type { FileArtifact, FileDownloadInfo } from '../contract/api/run.ts';
import { deriveKey } from '../platform/secret-box.ts';
import type { StoredFileArtifact } from '../store/index.ts';

/** The interface's presigned URL lifetime. */
export const DOWNLOAD_URL_TTL_SECONDS = 3600;

export interface FileUrlSignerOptions {
  /** HMAC key (at least 32 bytes), derived from the master key so every replica signs alike. */
  key: Buffer;
  /** Public base URL of the API, without `/v1` (`https://kubeglue.example`). */
  baseUrl: string;
  /** Current time in epoch milliseconds (tests inject a clock). */
  now?: () => number;
  ttlSeconds?: number;
}

export interface SignedUrl {
  url: string;
  /** Seconds the URL stays valid. */
  expiresIn: number;
}

export interface SignedUrlQuery {
  expires?: string | undefined;
  signature?: string | undefined;
}

const MIN_KEY_BYTES = 32;
/** base64url of a SHA-256 digest, without padding. */
const SIGNATURE = /^[A-Za-z0-9_-]{43}$/;
const EXPIRES = /^[0-9]{1,15}$/;
/** Binds signatures to this use of the key; bump it to invalidate every URL after a format change. */
const DOMAIN = 'kubeglue-file-download-v1';

/** What the signing key is derived from the master key for. */
const FILE_URLS_KEY_PURPOSE = 'kubeglue/file-urls/v1';

/**
 * The signer of a process that holds the master key: every process (api replicas, the operator, the
 * embedded one) derives the same key from it, so a link one of them signed is accepted by any other.
 */
export function masterKeySigner(masterKey: Buffer, baseUrl: string): FileUrlSigner {
  return new FileUrlSigner({ key: deriveKey(masterKey, FILE_URLS_KEY_PURPOSE), baseUrl });
}

export class FileUrlSigner {
  readonly #key: Buffer;
  readonly #baseUrl: string;
  readonly #now: () => number;
  readonly #ttlSeconds: number;

  constructor(opts: FileUrlSignerOptions) {
    if (opts.key.length < MIN_KEY_BYTES) {
      throw new Error(`the file URL signing key must be at least ${MIN_KEY_BYTES} bytes`);
    }
    const ttl = opts.ttlSeconds ?? DOWNLOAD_URL_TTL_SECONDS;
    if (!Number.isSafeInteger(ttl) || ttl < 1) throw new Error('ttlSeconds must be a positive integer');
    this.#key = Buffer.from(opts.key);
    this.#baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.#now = opts.now ?? Date.now;
    this.#ttlSeconds = ttl;
  }

  /** A URL valid for at least ttlSeconds (the expiry is rounded up to the next whole second). */
  sign(runId: string, fileKey: string): SignedUrl {
    const expires = String(Math.ceil(this.#now() / 1000) + this.#ttlSeconds);
    const signature = this.#signature(runId, fileKey, expires);
    const url = `${this.#baseUrl}/v1/files/${encodeURIComponent(runId)}/${encodeURIComponent(fileKey)}?expires=${expires}&signature=${signature}`;
    return { url, expiresIn: this.#ttlSeconds };
  }

  /**
   * Throws KG_ERR_DOWNLOAD_LINK_INVALID (403) unless the query holds a signature made by this key for exactly this
   * runId, fileKey and expiry, and the expiry has not passed. The signature is checked first, so
   * "expired" is only ever said of a genuine link.
   */
  verify(runId: string, fileKey: string, query: SignedUrlQuery): void {
    const { expires, signature } = query;
    if (
      expires === undefined ||
      signature === undefined ||
      !EXPIRES.test(expires) ||
      !SIGNATURE.test(signature)
    ) {
      throw KG_ERR_DOWNLOAD_LINK_INVALID();
    }
    const expected = Buffer.from(this.#signature(runId, fileKey, expires), 'ascii');
    const given = Buffer.from(signature, 'ascii');
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      throw KG_ERR_DOWNLOAD_LINK_INVALID();
    }
    if (this.#now() > Number(expires) * 1000) throw KG_ERR_DOWNLOAD_LINK_EXPIRED();
  }

  #signature(runId: string, fileKey: string, expires: string): string {
    // JSON keeps the fields apart whatever characters they contain.
    return createHmac('sha256', this.#key)
      .update(JSON.stringify([DOMAIN, runId, fileKey, expires]))
      .digest('base64url');
  }
}

/** The run's artifacts, each with a fresh presigned downloadUrl (single-run and file-list responses). */
export function withDownloadUrls(
  signer: FileUrlSigner,
  runId: string,
  artifacts: readonly StoredFileArtifact[],
): FileArtifact[] {
  return artifacts.map((artifact) => ({
    fileKey: artifact.fileKey,
    filename: artifact.filename,
    contentType: artifact.contentType,
    size: artifact.size,
    downloadUrl: signer.sign(runId, artifact.fileKey).url,
  }));
}

/** The body of `GET /v1/runs/{runId}/files/{fileKey}/download`. */
export function fileDownloadInfo(
  signer: FileUrlSigner,
  runId: string,
  artifact: StoredFileArtifact,
): z.infer<typeof FileDownloadInfo> {
  const { url, expiresIn } = signer.sign(runId, artifact.fileKey);
  return {
    success: true,
    fileKey: artifact.fileKey,
    filename: artifact.filename,
    contentType: artifact.contentType,
    size: artifact.size,
    downloadUrl: url,
    expiresIn,
  };
}
