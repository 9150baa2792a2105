/**
 * The /v1 port's certificate chain and key, read once at start from the files KUBEGLUE_TLS_CERT_FILE
 * and KUBEGLUE_TLS_KEY_FILE name. A file that cannot be read stops the start with the variable's name;
 * a pair that does not match is refused by Node when the server is built.
 */
import { readFile } from 'node:fs/promises';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

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

export async function loadTls(files: TlsFiles | undefined): Promise<TlsMaterial | undefined> {
  if (!files) return undefined;
  const [cert, key] = await Promise.all([
    read('KUBEGLUE_TLS_CERT_FILE', files.certFile),
    read('KUBEGLUE_TLS_KEY_FILE', files.keyFile),
  ]);
  return { cert, key };
}
