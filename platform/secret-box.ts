import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { chmod, link, mkdir, open, readFile, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { z } from 'zod';
import { SETTINGS } from '../config/config.ts';

const FORMAT_VERSION = 1;
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + IV_BYTES + TAG_BYTES;

/** HKDF purpose of the key that seals system credentials in the embedded store. */
export const CREDENTIALS_KEY_PURPOSE = 'kubeglue/system-credentials/v1';

/** Raised when sealed data cannot be opened; the message never contains any of the data. */
export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretBoxError';
  }
}

/**
 * AES-256-GCM with a random 96-bit IV per message. Sealed layout: version byte | IV | tag | ciphertext.
 * The version byte and the optional context are authenticated (additional data), so a blob sealed for one
 * context (e.g. one Secret's name) does not open under another.
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== KEY_BYTES) throw new Error(`SecretBox needs a ${KEY_BYTES}-byte key`);
    this.#key = Buffer.from(key);
  }

  seal(plain: Uint8Array, context?: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(additionalData(FORMAT_VERSION, context));
    const ciphertext = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([Buffer.of(FORMAT_VERSION), iv, cipher.getAuthTag(), ciphertext]);
  }

  /** Seals the JSON text of a value. */
  sealJson(value: unknown, context?: string): Buffer {
    return this.seal(Buffer.from(JSON.stringify(value), 'utf8'), context);
  }

  /**
   * Opens what sealJson sealed and checks it against the schema. Whatever fails (opening, JSON, the shape,
   * which `shape` names) is a SecretBoxError that says which, never with any of the data.
   */
  openJson<T>(sealed: Uint8Array, context: string, schema: z.ZodType<T>, shape: string): T {
    const plain = this.open(sealed, context);
    let json: unknown;
    try {
      json = JSON.parse(plain.toString('utf8'));
    } catch {
      throw new SecretBoxError('the decrypted content is not JSON');
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw new SecretBoxError(`the decrypted content is not ${shape}`);
    return parsed.data;
  }

  open(sealed: Uint8Array, context?: string): Buffer {
    const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
    if (bytes.length < HEADER_BYTES) throw new SecretBoxError('sealed data is truncated');
    const version = bytes[0] ?? 0;
    if (version !== FORMAT_VERSION) {
      throw new SecretBoxError(`sealed data has unknown format version ${version}`);
    }
    const iv = bytes.subarray(1, 1 + IV_BYTES);
    const tag = bytes.subarray(1 + IV_BYTES, HEADER_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(additionalData(version, context));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(bytes.subarray(HEADER_BYTES)), decipher.final()]);
    } catch {
      throw new SecretBoxError(
        'sealed data cannot be decrypted: the master key is not the one it was sealed with, or the data was altered',
      );
    }
  }
}

function additionalData(version: number, context: string | undefined): Buffer {
  return Buffer.concat([Buffer.of(version), Buffer.from(context ?? '', 'utf8')]);
}

/** An independent key for one purpose (credential sealing, file URL signing, notification signing, ...). */
export function deriveKey(master: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), Buffer.from(purpose, 'utf8'), KEY_BYTES));
}

/** The box that seals system credentials, keyed by a key derived from the master key. */
export function credentialsBox(master: Buffer): SecretBox {
  return new SecretBox(deriveKey(master, CREDENTIALS_KEY_PURPOSE));
}

const HEX_KEY = /^[0-9a-fA-F]{64}$/;
const BASE64_KEY = /^[A-Za-z0-9+/_-]{43}=?$/;
const KEY_FORMAT = '32 bytes written as 64 hexadecimal characters or as base64 (e.g. `openssl rand -hex 32`)';

/** 64 hex characters or base64 (standard or URL-safe) of exactly 32 bytes; undefined for anything else. */
export function parseMasterKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (HEX_KEY.test(trimmed)) return Buffer.from(trimmed, 'hex');
  if (!BASE64_KEY.test(trimmed)) return undefined;
  const key = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return key.length === KEY_BYTES ? key : undefined;
}

export interface LoadMasterKeyOptions {
  /** KUBEGLUE_MASTER_KEY, when set. */
  masterKey?: string | undefined;
  /** Where `master.key` is kept when no key is given. */
  dataDir: string;
  log?: (line: string) => void;
}

export const MASTER_KEY_FILE = 'master.key';

/**
 * The master key: KUBEGLUE_MASTER_KEY when given, else `<dataDir>/master.key`, created on first start with
 * 32 random bytes (stored as hex text, mode 0600) and reused afterwards.
 */
export async function loadMasterKey(options: LoadMasterKeyOptions): Promise<Buffer> {
  const log = options.log ?? (() => {});
  if (options.masterKey !== undefined) {
    const key = parseMasterKey(options.masterKey);
    // Never echo the value: it is, or is close to, a secret.
    if (!key) throw new Error(`${SETTINGS.tree.masterKey.name} must be ${KEY_FORMAT}`);
    return key;
  }
  const path = join(options.dataDir, MASTER_KEY_FILE);
  const existing = await readKeyFile(path, log);
  if (existing) return existing;
  await mkdir(options.dataDir, { recursive: true });
  const created = await createKeyFile(path);
  if (created.created) {
    log(
      `created the master key ${path}; it encrypts stored system credentials: back it up (or set ` +
        `${SETTINGS.tree.masterKey.name}), because losing it makes stored credentials unreadable`,
    );
  }
  return created.key;
}

async function readKeyFile(path: string, log: (line: string) => void): Promise<Buffer | undefined> {
  let content: Buffer;
  try {
    content = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read the master key file ${path}: ${(error as NodeJS.ErrnoException).code}`);
  }
  // Raw 32 bytes are accepted too, for key files made with `head -c 32 /dev/urandom`.
  const key = content.length === KEY_BYTES ? content : parseMasterKey(content.toString('utf8'));
  if (!key) throw new Error(`the master key file ${path} must hold ${KEY_FORMAT}, or 32 raw bytes`);
  const mode = (await stat(path)).mode & 0o777;
  if (mode & 0o077) {
    log(`warning: the master key file ${path} is readable by other users (mode ${mode.toString(8)})`);
  }
  return key;
}

/**
 * Writes a fresh key to a private temporary file, then hard-links it into place: the link either appears
 * complete or fails because another process won the race, in which case that process's key is used.
 */
async function createKeyFile(path: string): Promise<{ key: Buffer; created: boolean }> {
  const key = randomBytes(KEY_BYTES);
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(`${key.toString('hex')}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await chmod(temporary, 0o600);
    await link(temporary, path);
    return { key, created: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const winner = await readKeyFile(path, () => {});
    if (!winner) throw error;
    return { key: winner, created: false };
  } finally {
    await unlink(temporary).catch(() => {});
  }
}

/**
 * The master key of a Kubernetes role when given (KUBEGLUE_MASTER_KEY): replicas share it and Pods have no
 * data directory to keep a generated one in (the keys Secret, kube/secrets/keys.ts, is the other way).
 */
export function requireMasterKey(text: string | undefined): Buffer {
  if (!text) {
    throw new Error(
      `${SETTINGS.tree.masterKey.name} (32 bytes as 64 hex characters or base64) or ` +
        `${SETTINGS.tree.keysSecret.name} (a Secret the api creates once) is required: every replica must share the key`,
    );
  }
  const key = parseMasterKey(text);
  if (!key)
    throw new Error(`${SETTINGS.tree.masterKey.name} must be 32 bytes as 64 hex characters or base64`);
  return key;
}
