/**
 * A self-signed certificate for local TLS test servers (FTPS). TEST ONLY: the key is committed on
 * purpose and protects nothing. It is valid for `localhost`, `127.0.0.1` and `::1` until 2126; clients
 * trust it by passing `ca` (the certificate itself).
 */
import { readFileSync } from 'node:fs';

export interface TestTlsMaterial {
  cert: string;
  key: string;
  /** What a client passes as its trusted CA. */
  ca: string;
}

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

export function testTlsMaterial(): TestTlsMaterial {
  const cert = fixture('test-only-tls.cert.pem');
  return { cert, key: fixture('test-only-tls.key.pem'), ca: cert };
}
