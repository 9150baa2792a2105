/**
 * Outbound identity: the short-lived JWT a request step sends as `<<kubeglue_identity_jwt>>` (or superglue's
 * `<<sg_auth_jwt>>`). The API process signs it (for its worker pool, and for runner Pods through the
 * internal API), never the engine: the signing key stays in this process. The keys live in the store (one
 * row per key, the private part sealed under a key derived from the master key), so every replica signs
 * with the same key and publishes the same JWKS; rotation adds the next key ahead of time (keys.ts).
 */
import { randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import { z } from 'zod';
import type { Settings } from '../../config/config.ts';
import type { IdentityGrant, IdentityTokenSource } from '../../engine/types.ts';
import { deriveKey, SecretBox } from '../../platform/secret-box.ts';
import type { IdentityKeyQueries, IdentityKeyRow, Store, StoredRun } from '../../store/index.ts';
import { nextKeyStart, publishedKeys, signingKey } from './keys.ts';

/** HKDF purpose of the key that seals the identity signing keys in the store. */
const SEALING_PURPOSE = 'kubeglue/identity-keys/v1';
const ALGORITHM = 'ES256';
/** A replica reads the key set again after this long at most (less when keys are published less ahead). */
const MAX_CACHE_MS = 10_000;

/** The claims of a token that come from its run. */
export interface RunIdentity {
  runId: string;
  toolId: string;
  requestSource: string;
  keyId?: string | undefined;
}

export function runIdentity(run: StoredRun): RunIdentity {
  return {
    runId: run.runId,
    toolId: run.toolId,
    requestSource: run.requestSource,
    ...(run.userId ? { keyId: run.userId } : {}),
  };
}

export interface IdentityIssuerOptions {
  keys: IdentityKeyQueries;
  masterKey: Buffer;
  /** The tokens' `iss`. */
  issuer: string;
  tokenTtlMs: number;
  rotation: { everyMs: number; aheadMs: number };
  now?: () => number;
}

type SigningKey = Awaited<ReturnType<typeof importJWK>>;

/** One stored key as this process uses it. */
interface LoadedKey extends IdentityKeyRow {
  jwk: JWK;
}

const PrivateJwk = z.looseObject({ kty: z.literal('EC'), crv: z.literal('P-256'), d: z.string() });

export class IdentityIssuer {
  readonly #options: IdentityIssuerOptions;
  readonly #box: SecretBox;
  readonly #now: () => number;
  readonly #cacheMs: number;
  #loaded: { keys: LoadedKey[]; at: number } | undefined;
  #loading: Promise<LoadedKey[]> | undefined;
  readonly #signers = new Map<string, Promise<SigningKey>>();

  constructor(options: IdentityIssuerOptions) {
    this.#options = options;
    this.#box = new SecretBox(deriveKey(options.masterKey, SEALING_PURPOSE));
    this.#now = options.now ?? Date.now;
    // A key published `aheadMs` before it signs is seen by every replica's JWKS before then.
    this.#cacheMs = Math.min(MAX_CACHE_MS, options.rotation.aheadMs / 2);
  }

  get issuer(): string {
    return this.#options.issuer;
  }

  /** How long a new key is published before it signs. */
  get publishAheadMs(): number {
    return this.#options.rotation.aheadMs;
  }

  /** The public keys verifiers need now: `{ keys: [...] }` of `/.well-known/jwks.json`. */
  async jwks(): Promise<{ keys: JWK[] }> {
    const now = this.#now();
    const keys = await this.#keys(now);
    return { keys: publishedKeys(keys, now).map((key) => key.jwk) };
  }

  /** A token of `run` for a request to `audience` (an origin). */
  async mint(run: RunIdentity, audience: string): Promise<IdentityGrant> {
    const now = this.#now();
    const key = signingKey(await this.#keys(now), now);
    if (!key) throw new Error('no identity signing key is in effect yet');
    const iat = Math.floor(now / 1000);
    const exp = iat + Math.floor(this.#options.tokenTtlMs / 1000);
    const claims = {
      run_id: run.runId,
      tool_id: run.toolId,
      request_source: run.requestSource,
      ...(run.keyId ? { key_id: run.keyId } : {}),
    };
    let jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: ALGORITHM, kid: key.kid, typ: 'JWT' })
      .setIssuer(this.#options.issuer)
      .setAudience(audience)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .setJti(randomUUID());
    if (run.keyId) jwt = jwt.setSubject(run.keyId);
    return { token: await jwt.sign(await this.#signer(key)), expiresAt: exp * 1000 };
  }

  /** Where a run's engine gets its tokens: this issuer with the run's claims. */
  forRun(run: StoredRun): IdentityTokenSource {
    const identity = runIdentity(run);
    return (audience) => this.mint(identity, audience);
  }

  #signer(key: LoadedKey): Promise<SigningKey> {
    let signer = this.#signers.get(key.kid);
    if (!signer) {
      const jwk = this.#box.openJson(key.sealed, key.kid, PrivateJwk, 'a private JWK');
      signer = importJWK(jwk, ALGORITHM);
      this.#signers.set(key.kid, signer);
    }
    return signer;
  }

  /** The key set, from the cache while it is fresh; rotated first when a new key is due. */
  async #keys(now: number): Promise<LoadedKey[]> {
    const loaded = this.#loaded;
    if (
      loaded &&
      now - loaded.at < this.#cacheMs &&
      nextKeyStart(loaded.keys, now, this.#options.rotation) === undefined
    ) {
      return loaded.keys;
    }
    this.#loading ??= this.#load(now).finally(() => {
      this.#loading = undefined;
    });
    return this.#loading;
  }

  async #load(now: number): Promise<LoadedKey[]> {
    let rows = await this.#options.keys.list();
    const start = nextKeyStart(rows, now, this.#options.rotation);
    if (start !== undefined) {
      const generation = (rows.at(-1)?.generation ?? 0) + 1;
      // Another replica may add this generation first: then its key is the one, and both read it back.
      await this.#options.keys.add(await this.#newKey(generation, now, start));
      const published = publishedKeys(rows, now);
      const oldest = published[0]?.generation;
      if (oldest !== undefined) await this.#options.keys.pruneBelow(oldest);
      rows = await this.#options.keys.list();
    }
    const keys = rows.map((row) => ({ ...row, jwk: JSON.parse(row.publicJwk) as JWK }));
    this.#loaded = { keys, at: now };
    for (const kid of this.#signers.keys()) {
      if (!keys.some((key) => key.kid === kid)) this.#signers.delete(kid);
    }
    return keys;
  }

  async #newKey(generation: number, now: number, signsFrom: number): Promise<IdentityKeyRow> {
    const pair = await generateKeyPair(ALGORITHM, { extractable: true });
    const publicJwk = await exportJWK(pair.publicKey);
    const kid = await calculateJwkThumbprint(publicJwk);
    const privateJwk = await exportJWK(pair.privateKey);
    return {
      kid,
      generation,
      publicJwk: JSON.stringify({ ...publicJwk, kid, alg: ALGORITHM, use: 'sig' }),
      sealed: this.#box.sealJson(privateJwk, kid),
      createdAt: now,
      signsFrom,
    };
  }
}

/** The issuer of a process from its settings: the tokens' `iss` is the setting, else the server's public URL. */
export function identityIssuer(options: {
  store: Pick<Store, 'identityKeys'>;
  masterKey: Buffer;
  settings: Settings<'api'>['identity'];
  publicUrl: string;
}): IdentityIssuer {
  const { settings } = options;
  return new IdentityIssuer({
    keys: options.store.identityKeys,
    masterKey: options.masterKey,
    issuer: settings.issuer ?? options.publicUrl,
    tokenTtlMs: settings.tokenTtlMs,
    rotation: { everyMs: settings.keyRotationMs, aheadMs: settings.keyPublishAheadMs },
  });
}
