/** The run's outbound identity tokens in the engine (engine/identity-tokens.ts): reuse, redaction, names. */
import { describe, expect, it } from 'vitest';
import { IdentityTokens, namesIdentityToken, withoutIdentityToken } from '../../../engine/identity-tokens.ts';
import { Redactor } from '../../../engine/redact.ts';

describe('identity tokens', () => {
  it('reuses a token per origin while more than half of its life is left, and redacts each', async () => {
    let now = 1_000_000;
    const asked: string[] = [];
    const source = async (audience: string) => {
      asked.push(audience);
      return { token: `token-${asked.length}-for-${audience}`, expiresAt: now + 300_000 };
    };
    const redactor = new Redactor();
    const tokens = new IdentityTokens(redactor, source, () => now);
    const a = 'https://a.example.com';
    const first = await Promise.all([tokens.sourceData(a), tokens.sourceData(a)]);
    expect(first[0]).toEqual({ kubeglue_identity_jwt: `token-1-for-${a}`, sg_auth_jwt: `token-1-for-${a}` });
    expect(first[1]).toEqual(first[0]);
    now += 149_999;
    expect((await tokens.sourceData(a)).kubeglue_identity_jwt).toBe(`token-1-for-${a}`);
    expect((await tokens.sourceData('https://b.example.com')).sg_auth_jwt).toBe(
      'token-2-for-https://b.example.com',
    );
    now += 1;
    expect((await tokens.sourceData(a)).kubeglue_identity_jwt).toBe(`token-3-for-${a}`);
    expect(asked).toEqual([a, 'https://b.example.com', a]);
    expect(redactor.string(`Bearer token-1-for-${a} token-3-for-${a}`)).toBe(
      'Bearer <<kubeglue_identity_jwt>> <<kubeglue_identity_jwt>>',
    );
  });

  it('fails a step that names one in a run without a source, saying so', async () => {
    const tokens = new IdentityTokens(new Redactor(), undefined, () => 0);
    await expect(tokens.sourceData('https://a.example.com')).rejects.toThrow(
      '<<kubeglue_identity_jwt>> comes from the kubeglue API, which this run cannot reach',
    );
  });

  it('is named only by its names written out, and never reaches template functions', async () => {
    expect(namesIdentityToken({ Authorization: 'Bearer <<kubeglue_identity_jwt>>' })).toBe(true);
    expect(namesIdentityToken(undefined, { jwt: '<< sg_auth_jwt >>' })).toBe(true);
    expect(namesIdentityToken('{"token": "<<(s) => s.sg_auth_jwt>>"}', { a: 'kubeglue_identity_jwt' })).toBe(
      false,
    );
    const seen: unknown[] = [];
    const evaluate = withoutIdentityToken(async (_source, args) => {
      seen.push(args);
      return null;
    });
    await evaluate('(s) => s', [{ kubeglue_identity_jwt: 'x', sg_auth_jwt: 'y', other: 1 }, 2]);
    expect(seen).toEqual([[{ other: 1 }, 2]]);
  });
});
