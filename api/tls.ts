/**
 * The /v1 port's certificate chain and key, read once at start from the files KUBEGLUE_TLS_CERT_FILE
 * and KUBEGLUE_TLS_KEY_FILE name. A file that cannot be read stops the start with the variable's name;
 * a pair that does not match is refused by Node when the server is built.
 */
import { readFile } from 'node:fs/promises';
import { type ApiSettings, SETTINGS } from '../config/config.ts';

/** KUBEGLUE_TLS_CERT_FILE and KUBEGLUE_TLS_KEY_FILE (config/server.ts): both or neither. */
export type TlsFiles = ApiSettings['tls'];

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
}

async function read(variable: string, path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    throw new Error(`${variable}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

export async function loadTls(files: TlsFiles): Promise<TlsMaterial | undefined> {
  if (!files.certFile || !files.keyFile) return undefined;
  const { tls } = SETTINGS.tree;
  const [cert, key] = await Promise.all([
    read(tls.certFile.name, files.certFile),
    read(tls.keyFile.name, files.keyFile),
  ]);
  return { cert, key };
}
