/**
 * NTLMv2 authentication as an SMB2 SESSION_SETUP carries it (raw NTLMSSP messages, MS-NLMP): the
 * NEGOTIATE message, the CHALLENGE the server answers, and the AUTHENTICATE message with an NTLMv2
 * response, plus the session key it yields. NTLMv1 and LM are never offered: current servers refuse them
 * (Samba since 4.5, Windows by policy). Key exchange (an RC4-wrapped random key) is not negotiated, so the
 * session key is the NTLMv2 session base key; the connection is signed with keys derived from it.
 */
import { createHmac, randomBytes } from 'node:crypto';

const SIGNATURE = Buffer.from('NTLMSSP\0', 'latin1');

// MS-NLMP 2.2.2.5
const NEGOTIATE_UNICODE = 0x00000001;
const REQUEST_TARGET = 0x00000004;
const NEGOTIATE_SIGN = 0x00000010;
const NEGOTIATE_NTLM = 0x00000200;
const NEGOTIATE_ALWAYS_SIGN = 0x00008000;
const NEGOTIATE_EXTENDED_SESSIONSECURITY = 0x00080000;
const NEGOTIATE_TARGET_INFO = 0x00800000;
const NEGOTIATE_128 = 0x20000000;
const NEGOTIATE_56 = 0x80000000;

const CLIENT_FLAGS =
  (NEGOTIATE_UNICODE |
    REQUEST_TARGET |
    NEGOTIATE_SIGN |
    NEGOTIATE_NTLM |
    NEGOTIATE_ALWAYS_SIGN |
    NEGOTIATE_EXTENDED_SESSIONSECURITY |
    NEGOTIATE_TARGET_INFO |
    NEGOTIATE_128 |
    NEGOTIATE_56) >>>
  0;

/** The AV pair id of the server's time in the CHALLENGE's target information. */
const MSV_AV_TIMESTAMP = 7;
const MSV_AV_EOL = 0;

/** MD4 (RFC 1320): NTLM's password hash. OpenSSL 3 (Node ≥ 17) no longer offers it. */
export function md4(input: Buffer): Buffer {
  const length = input.length;
  const blocks = Math.ceil((length + 9) / 64);
  const message = Buffer.alloc(blocks * 64);
  input.copy(message);
  message[length] = 0x80;
  message.writeUInt32LE((length * 8) >>> 0, blocks * 64 - 8);
  message.writeUInt32LE(Math.floor(length / 0x20000000), blocks * 64 - 4);
  let a = 0x67452301;
  let b = 0xefcdab89;
  let c = 0x98badcfe;
  let d = 0x10325476;
  const rotl = (x: number, s: number): number => (x << s) | (x >>> (32 - s));
  const f = (x: number, y: number, z: number): number => (x & y) | (~x & z);
  const g = (x: number, y: number, z: number): number => (x & y) | (x & z) | (y & z);
  const h = (x: number, y: number, z: number): number => x ^ y ^ z;
  const x = new Array<number>(16);
  for (let block = 0; block < blocks; block++) {
    for (let i = 0; i < 16; i++) x[i] = message.readUInt32LE(block * 64 + i * 4);
    const [aa, bb, cc, dd] = [a, b, c, d];
    const word = (i: number): number => x[i] as number;
    for (const i of [0, 4, 8, 12]) {
      a = rotl((a + f(b, c, d) + word(i)) | 0, 3);
      d = rotl((d + f(a, b, c) + word(i + 1)) | 0, 7);
      c = rotl((c + f(d, a, b) + word(i + 2)) | 0, 11);
      b = rotl((b + f(c, d, a) + word(i + 3)) | 0, 19);
    }
    for (const i of [0, 1, 2, 3]) {
      a = rotl((a + g(b, c, d) + word(i) + 0x5a827999) | 0, 3);
      d = rotl((d + g(a, b, c) + word(i + 4) + 0x5a827999) | 0, 5);
      c = rotl((c + g(d, a, b) + word(i + 8) + 0x5a827999) | 0, 9);
      b = rotl((b + g(c, d, a) + word(i + 12) + 0x5a827999) | 0, 13);
    }
    for (const i of [0, 2, 1, 3]) {
      a = rotl((a + h(b, c, d) + word(i) + 0x6ed9eba1) | 0, 3);
      d = rotl((d + h(a, b, c) + word(i + 8) + 0x6ed9eba1) | 0, 9);
      c = rotl((c + h(d, a, b) + word(i + 4) + 0x6ed9eba1) | 0, 11);
      b = rotl((b + h(c, d, a) + word(i + 12) + 0x6ed9eba1) | 0, 15);
    }
    a = (a + aa) | 0;
    b = (b + bb) | 0;
    c = (c + cc) | 0;
    d = (d + dd) | 0;
  }
  const digest = Buffer.alloc(16);
  [a, b, c, d].forEach((value, i) => {
    digest.writeInt32LE(value, i * 4);
  });
  return digest;
}

function hmacMd5(key: Buffer, ...parts: Buffer[]): Buffer {
  const hmac = createHmac('md5', key);
  for (const part of parts) hmac.update(part);
  return hmac.digest();
}

function utf16(text: string): Buffer {
  return Buffer.from(text, 'utf16le');
}

/** The NEGOTIATE message: flags only, no domain or workstation. */
export function negotiateMessage(): Buffer {
  const message = Buffer.alloc(32);
  SIGNATURE.copy(message, 0);
  message.writeUInt32LE(1, 8);
  message.writeUInt32LE(CLIENT_FLAGS, 12);
  return message;
}

export interface Challenge {
  flags: number;
  serverChallenge: Buffer;
  targetInfo: Buffer;
}

/** Reads the server's CHALLENGE message (found inside the SESSION_SETUP security buffer). */
export function parseChallenge(buffer: Buffer): Challenge {
  const start = buffer.indexOf(SIGNATURE);
  if (start < 0 || buffer.length < start + 48 || buffer.readUInt32LE(start + 8) !== 2) {
    throw new Error('the server did not answer with an NTLM challenge');
  }
  const message = buffer.subarray(start);
  const infoLength = message.readUInt16LE(40);
  const infoOffset = message.readUInt32LE(44);
  if (infoOffset + infoLength > message.length) throw new Error('the NTLM challenge is truncated');
  return {
    flags: message.readUInt32LE(20),
    serverChallenge: Buffer.from(message.subarray(24, 32)),
    targetInfo: Buffer.from(message.subarray(infoOffset, infoOffset + infoLength)),
  };
}

/** The server's MsvAvTimestamp, when its target information has one. */
function serverTimestamp(targetInfo: Buffer): Buffer | undefined {
  let offset = 0;
  while (offset + 4 <= targetInfo.length) {
    const id = targetInfo.readUInt16LE(offset);
    const length = targetInfo.readUInt16LE(offset + 2);
    if (id === MSV_AV_EOL) return undefined;
    if (id === MSV_AV_TIMESTAMP && length === 8) return targetInfo.subarray(offset + 4, offset + 12);
    offset += 4 + length;
  }
  return undefined;
}

/** Now as a Windows FILETIME (100 ns since 1601), little-endian. */
function fileTimeNow(): Buffer {
  const time = Buffer.alloc(8);
  time.writeBigUInt64LE(BigInt(Date.now()) * 10_000n + 116_444_736_000_000_000n);
  return time;
}

export interface Identity {
  username: string;
  password: string;
  /** The user's domain (or workgroup); '' lets the server pick its own. */
  domain: string;
}

export interface Authentication {
  message: Buffer;
  /** The session key signing keys are derived from (16 bytes). */
  sessionKey: Buffer;
}

/** The AUTHENTICATE message with an NTLMv2 response to the challenge, and the session key it yields. */
export function authenticateMessage(identity: Identity, challenge: Challenge): Authentication {
  const ntHash = md4(utf16(identity.password));
  const responseKey = hmacMd5(ntHash, utf16(identity.username.toUpperCase() + identity.domain));
  const clientChallenge = randomBytes(8);
  const blob = Buffer.concat([
    Buffer.from([1, 1, 0, 0, 0, 0, 0, 0]),
    serverTimestamp(challenge.targetInfo) ?? fileTimeNow(),
    clientChallenge,
    Buffer.alloc(4),
    challenge.targetInfo,
    Buffer.alloc(4),
  ]);
  const proof = hmacMd5(responseKey, challenge.serverChallenge, blob);
  const ntResponse = Buffer.concat([proof, blob]);
  // With NTLMv2 the LM response carries nothing the server needs (MS-NLMP 3.1.5.1.2: Z(24)).
  const lmResponse = Buffer.alloc(24);
  const domain = utf16(identity.domain);
  const user = utf16(identity.username);
  const fields = [lmResponse, ntResponse, domain, user, Buffer.alloc(0), Buffer.alloc(0)];
  const header = Buffer.alloc(64);
  SIGNATURE.copy(header, 0);
  header.writeUInt32LE(3, 8);
  let offset = header.length;
  fields.forEach((field, i) => {
    header.writeUInt16LE(field.length, 12 + i * 8);
    header.writeUInt16LE(field.length, 14 + i * 8);
    header.writeUInt32LE(offset, 16 + i * 8);
    offset += field.length;
  });
  header.writeUInt32LE((challenge.flags & CLIENT_FLAGS) >>> 0, 60);
  return {
    message: Buffer.concat([header, ...fields]),
    sessionKey: hmacMd5(responseKey, proof),
  };
}
