/**
 * Outbound identity keys (runs/identity/): every replica on one store signs with the same key and serves the
 * same JWKS; a rotation publishes the next key before it signs and keeps the old one published until the
 * tokens it signed have expired, so a token signed before a rotation still verifies after it. Two issuers on
 * one real store (SQLite and Postgres) stand for two replicas; their clock is moved by hand, and every token
 * is verified with jose against the JWKS they serve.
 */
import { createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import { expect, it } from 'vitest';
import { IdentityIssuer, type RunIdentity } from '../../../runs/identity/issuer.ts';
import { TEST_MASTER_KEY } from '../../support/embedded.ts';
import { describeStore } from '../../support/store.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const ISSUER = 'https://kubeglue.example.com';
const RUN: RunIdentity = { runId: 'run-1', toolId: 'tool-a', requestSource: 'api', keyId: 'key-1' };
const AUDIENCE = 'https://api.example.com';

describeStore('identity keys', (store) => {
  let now = Date.parse('2026-12-01T10:00:00.000Z');
  const replica = () =>
    new IdentityIssuer({
      keys: store.identityKeys,
      masterKey: Buffer.from(TEST_MASTER_KEY, 'hex'),
      issuer: ISSUER,
      tokenTtlMs: 5 * MINUTE,
      rotation: { everyMs: 24 * HOUR, aheadMs: HOUR },
      now: () => now,
    });
  const kidOf = (token: string) => decodeProtectedHeader(token).kid;
  const kidsOf = (jwks: JSONWebKeySet) => jwks.keys.map((key) => key.kid);
  async function verify(token: string, jwks: JSONWebKeySet) {
    return jwtVerify(token, createLocalJWKSet(jwks), {
      issuer: ISSUER,
      audience: AUDIENCE,
      currentDate: new Date(now),
      algorithms: ['ES256'],
    });
  }

  it('rotates without downtime: the next key is published before it signs, the old one until its tokens expired', async () => {
    const a = replica();
    const b = replica();
    const first = await a.mint(RUN, AUDIENCE);
    // The other replica signs with the same key and publishes the same set.
    const second = await b.mint(RUN, AUDIENCE);
    const oldKid = kidOf(first.token);
    expect(kidOf(second.token)).toBe(oldKid);
    expect(kidsOf(await b.jwks())).toEqual([oldKid]);
    const { payload } = await verify(first.token, await b.jwks());
    expect(payload).toMatchObject({
      run_id: 'run-1',
      tool_id: 'tool-a',
      request_source: 'api',
      key_id: 'key-1',
    });
    expect(payload.exp! - payload.iat!).toBe(300);

    // An hour before the rotation the next key is in the JWKS of both replicas, and does not sign yet.
    now += 23 * HOUR;
    const ahead = await a.jwks();
    expect(ahead.keys).toHaveLength(2);
    const newKid = kidsOf(ahead).find((kid) => kid !== oldKid);
    expect(kidsOf(await b.jwks())).toEqual(kidsOf(ahead));
    expect(kidOf((await b.mint(RUN, AUDIENCE)).token)).toBe(oldKid);
    now += HOUR - MINUTE;
    const beforeRotation = await b.mint(RUN, AUDIENCE);
    expect(kidOf(beforeRotation.token)).toBe(oldKid);

    // Rotated: new tokens carry the new kid; the token signed just before still verifies.
    now += MINUTE;
    const afterRotation = await a.mint(RUN, AUDIENCE);
    expect(kidOf(afterRotation.token)).toBe(newKid);
    expect(kidOf((await b.mint(RUN, AUDIENCE)).token)).toBe(newKid);
    now += 3 * MINUTE;
    const served = await b.jwks();
    expect(kidsOf(served)).toEqual([oldKid, newKid]);
    await verify(beforeRotation.token, served);
    await verify(afterRotation.token, served);

    // Once no token of the old key can be valid any more (5 min + a minute of clock skew), it is gone.
    now += 3 * MINUTE + 1;
    expect(kidsOf(await a.jwks())).toEqual([newKid]);
    expect(kidsOf(await replica().jwks())).toEqual([newKid]);
  });

  it('keeps the private keys sealed in the store: rows hold no private JWK member', async () => {
    const rows = await store.identityKeys.list();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(JSON.parse(row.publicJwk)).not.toHaveProperty('d');
      expect(Buffer.from(row.sealed).toString('utf8')).not.toContain('"d"');
    }
  });
});
