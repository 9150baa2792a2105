/**
 * SMB2/3 message signing (MS-SMB2 3.1.4.1): HMAC-SHA256 for dialects 2.0.2 and 2.1, AES-128-CMAC for the
 * 3.x dialects, with the 3.x signing key derived by the SP800-108 KDF (MS-SMB2 3.1.4.2) from the session
 * key, and for 3.1.1 from the pre-authentication integrity hash of the negotiation and session setup.
 * Messages are given as a list of buffers (a request's header and body, then its data) so large payloads
 * are signed where they lie, never copied into one buffer.
 */
import { createCipheriv, createHash, createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_OFFSET = 48;
export const SIGNATURE_LENGTH = 16;

/** SP800-108 counter-mode KDF with HMAC-SHA256, 128-bit output (MS-SMB2 3.1.4.2). */
export function deriveKey(key: Buffer, label: string, context: Buffer): Buffer {
  return createHmac('sha256', key)
    .update(Buffer.from([0, 0, 0, 1]))
    .update(Buffer.from(`${label}\0`, 'latin1'))
    .update(Buffer.from([0]))
    .update(context)
    .update(Buffer.from([0, 0, 0, 128]))
    .digest()
    .subarray(0, 16);
}

/** The signing key of a session: the session key itself for 2.x, derived for 3.x. */
export function signingKey(dialect: number, sessionKey: Buffer, preauthHash: Buffer | undefined): Buffer {
  const key = Buffer.alloc(16);
  sessionKey.copy(key, 0, 0, Math.min(16, sessionKey.length));
  if (dialect < 0x0300) return key;
  if (dialect >= 0x0311) {
    if (!preauthHash) throw new Error('SMB 3.1.1 signing needs the pre-authentication hash');
    return deriveKey(key, 'SMBSigningKey', preauthHash);
  }
  return deriveKey(key, 'SMB2AESCMAC', Buffer.from('SmbSign\0', 'latin1'));
}

/** Doubling in GF(2^128), as CMAC derives its subkeys (RFC 4493 2.3). */
function double(block: Buffer): Buffer {
  const out = Buffer.alloc(16);
  let carry = 0;
  for (let i = 15; i >= 0; i--) {
    const byte = block[i] as number;
    out[i] = ((byte << 1) | carry) & 0xff;
    carry = byte >> 7;
  }
  if (carry) out[15] = (out[15] as number) ^ 0x87;
  return out;
}

/** How much of a message AES-CBC encrypts per call: bounds the throw-away ciphertext CMAC produces. */
const CMAC_SLICE = 64 * 1024;

/** AES-128-CMAC (RFC 4493) over the concatenation of `parts`. */
export function aesCmac(key: Buffer, parts: readonly Buffer[]): Buffer {
  const zero = Buffer.alloc(16);
  const ecb = createCipheriv('aes-128-ecb', key, null).setAutoPadding(false);
  const subkey1 = double(ecb.update(zero));
  const subkey2 = double(subkey1);
  const cbc = createCipheriv('aes-128-cbc', key, zero).setAutoPadding(false);
  const total = parts.reduce((sum, part) => sum + part.length, 0);
  // Every whole block but the last goes through CBC as is; the last (whole or padded) is masked first.
  const lastStart = total === 0 ? 0 : Math.floor((total - 1) / 16) * 16;
  let position = 0;
  const last = Buffer.alloc(16);
  for (const part of parts) {
    let offset = 0;
    while (offset < part.length) {
      if (position < lastStart) {
        const take = Math.min(part.length - offset, lastStart - position, CMAC_SLICE);
        // Only the chaining state matters; the ciphertext is thrown away.
        cbc.update(part.subarray(offset, offset + take));
        offset += take;
        position += take;
      } else {
        const take = part.length - offset;
        part.copy(last, position - lastStart, offset, offset + take);
        offset += take;
        position += take;
      }
    }
  }
  const lastLength = total - lastStart;
  let masked: Buffer;
  if (lastLength === 16) {
    masked = Buffer.from(last.map((byte, i) => byte ^ (subkey1[i] as number)));
  } else {
    last[lastLength] = 0x80;
    masked = Buffer.from(last.map((byte, i) => byte ^ (subkey2[i] as number)));
  }
  // CBC keeps its chaining state across update() calls: the last block continues the chain.
  const tag = cbc.update(masked);
  return Buffer.from(tag.subarray(tag.length - 16));
}

/** The signature of a message whose signature field is zero. */
export function computeSignature(dialect: number, key: Buffer, parts: readonly Buffer[]): Buffer {
  if (dialect >= 0x0300) return aesCmac(key, parts);
  const hmac = createHmac('sha256', key);
  for (const part of parts) hmac.update(part);
  return hmac.digest().subarray(0, SIGNATURE_LENGTH);
}

/** Writes the signature into a message's header (its first part), which must already have the SIGNED flag. */
export function sign(dialect: number, key: Buffer, parts: readonly Buffer[]): void {
  const header = parts[0] as Buffer;
  header.fill(0, SIGNATURE_OFFSET, SIGNATURE_OFFSET + SIGNATURE_LENGTH);
  computeSignature(dialect, key, parts).copy(header, SIGNATURE_OFFSET);
}

/** Whether a received message (header and body in one buffer) carries the right signature. */
export function verify(dialect: number, key: Buffer, message: Buffer): boolean {
  const given = Buffer.from(message.subarray(SIGNATURE_OFFSET, SIGNATURE_OFFSET + SIGNATURE_LENGTH));
  message.fill(0, SIGNATURE_OFFSET, SIGNATURE_OFFSET + SIGNATURE_LENGTH);
  const expected = computeSignature(dialect, key, [message]);
  given.copy(message, SIGNATURE_OFFSET);
  return timingSafeEqual(given, expected);
}

/** SMB 3.1.1's pre-authentication integrity hash: SHA-512 chained over every message (MS-SMB2 3.2.5.2). */
export function chainHash(previous: Buffer, parts: readonly Buffer[]): Buffer {
  const hash = createHash('sha512').update(previous);
  for (const part of parts) hash.update(part);
  return hash.digest();
}
