/** Outbound identity: the tokens request steps send as `<<kubeglue_identity_jwt>>` (docs/operations.md). */
import { baseUrl, duration } from './schemas.ts';
import { section, setting } from './setting.ts';

/** The processes that sign tokens (for their worker pools and for runner Pods) and serve the JWKS. */
const SIGNERS = ['embedded', 'api'] as const;

/** A token lives at most this long (the bound); the setting may only shorten it. */
export const MAX_IDENTITY_TOKEN_TTL_MS = 5 * 60_000;

export const IDENTITY = section(
  'Outbound identity',
  'The short-lived JWT a request step sends as `<<kubeglue_identity_jwt>>` (or `<<sg_auth_jwt>>`), signed by ' +
    'keys kept in the store and published at `/.well-known/jwks.json` ([operations](operations.md#outbound-identity)).',
  {
    identity: {
      issuer: setting(
        'KUBEGLUE_IDENTITY_ISSUER',
        baseUrl.optional(),
        undefined,
        SIGNERS,
        "the tokens' `iss`; the JWKS is at `<issuer>/.well-known/jwks.json` when the issuer is this server (unset: KUBEGLUE_PUBLIC_URL, else http(s)://<host>:<port>)",
      ),
      tokenTtlMs: setting(
        'KUBEGLUE_IDENTITY_TOKEN_TTL',
        duration.refine((ms) => ms >= 1000 && ms <= MAX_IDENTITY_TOKEN_TTL_MS, 'between 1s and 5m'),
        '5m',
        SIGNERS,
        'how long a token is valid (`exp` − `iat`), at most 5m; a run reuses a token for the same origin until less than half of this is left',
      ),
      keyRotationMs: setting(
        'KUBEGLUE_IDENTITY_KEY_ROTATION',
        duration,
        '30d',
        SIGNERS,
        "a signing key signs for this long, then the next one takes over (0: never rotates); lowered below the current key's age, it starts a rotation at the next token (the new key signs once published for KUBEGLUE_IDENTITY_KEY_PUBLISH_AHEAD)",
      ),
      keyPublishAheadMs: setting(
        'KUBEGLUE_IDENTITY_KEY_PUBLISH_AHEAD',
        duration,
        '1h',
        SIGNERS,
        'a new key is in the JWKS this long before it signs, so verifiers that cache the JWKS know it first; keep it longer than their cache',
      ),
    },
  },
);
