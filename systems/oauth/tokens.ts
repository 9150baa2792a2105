/**
 * The access tokens of OAuth systems: obtained on first use, cached sealed in the store with their expiry,
 * refreshed before they expire or when a target rejected them, with one refresh at a time across every
 * process on the store (a lease row: the holder asks the provider, the others wait for its result), and the
 * authorization-code flow (state, PKCE) that stores a refresh token. Never logs, returns or throws a token.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type ApiError,
  KG_ERR_OAUTH_DENIED,
  KG_ERR_OAUTH_NOT_AUTHORIZED,
  KG_ERR_OAUTH_NOT_CONFIGURED,
  KG_ERR_OAUTH_PROVIDER_UNREACHABLE,
  KG_ERR_OAUTH_REAUTHORIZATION_REQUIRED,
  KG_ERR_OAUTH_REFRESH_BUSY,
  KG_ERR_OAUTH_STATE_INVALID,
  KG_ERR_OAUTH_TOKEN_REFUSED,
} from '../../contract/api/errors.ts';
import type { Environment } from '../../contract/api/system.ts';
import { accessTokenHash } from '../../contract/wire/token-hash.ts';
import { deriveKey, SecretBox } from '../../platform/secret-box.ts';
import type { OAuthQueries, OAuthStateRow, OAuthTokenRow } from '../../store/index.ts';
import { codeChallengeS256, hashState, newCodeVerifier, newState } from './pkce.ts';
import { type ProviderHttp, ProviderUnreachableError } from './provider-http.ts';
import {
  type GrantType,
  grantOf,
  needsRefresh,
  normaliseScopes,
  type OAuthSettings,
  settingsFingerprint,
} from './settings.ts';
import type { GrantRequest } from './token-request.ts';
import type { TokenAnswer, TokenGrant } from './token-response.ts';

export const OAUTH_TOKENS_KEY_PURPOSE = 'kubeglue/oauth-tokens/v1';
/** How long an authorization request may take (the state's lifetime). */
export const AUTHORIZATION_TTL_MS = 10 * 60_000;

/** One system variant with OAuth settings, as the token service needs it. */
export interface OAuthSystemRef {
  /** `<namespace>/<System resource name>`: one cache entry per variant. */
  key: string;
  systemId: string;
  environment: Environment;
  settings: OAuthSettings;
  allowedNetworks?: string[] | undefined;
}

export interface AccessToken {
  accessToken: string;
  /** Epoch ms; absent when the provider gave no lifetime. */
  expiresAt?: number;
}

/** What `GET /v1/systems/{id}` shows: never a token. */
export interface OAuthView {
  status: 'none' | 'not_authorized' | 'active' | 'expired' | 'needs_reauthorization';
  expiresAt?: string;
  scopes?: string;
}

export interface OAuthTokensOptions {
  store: OAuthQueries;
  masterKey: Buffer;
  http: Pick<ProviderHttp, 'token'>;
  /** Names this process in the refresh lease. */
  owner?: string;
  /** How long a lease holds before another process may take over (a holder that died). */
  leaseMs?: number;
  /** How often a waiting process looks for the holder's result. */
  pollMs?: number;
  /** How long a caller waits for another process's refresh before giving up. */
  waitMs?: number;
  now?: () => number;
  /** Told when a refresh token was refused (invalid_grant) and when a system was authorized again. */
  onNeedsReauthorization?: (ref: OAuthSystemRef) => Promise<void>;
  onAuthorized?: (ref: OAuthSystemRef) => Promise<void>;
}

interface SealedTokens {
  accessToken: string;
  refreshToken?: string;
}

interface SealedState {
  verifier: string;
  redirectUri: string;
  fingerprint: string;
  /** Where the callback sends the browser when the flow ends (return-to.ts checked it). */
  returnTo?: string;
}

/** A flow whose state came back to the callback: taken from the store (so never usable again) and opened. */
export interface ReturnedAuthorization {
  row: OAuthStateRow;
  sealed: SealedState;
}

/** A token a target refused (401): the token itself, or its SHA-256 hex (accessTokenHash) from a runner Pod. */
export type RejectedToken = string | { sha256: string };

export class OAuthTokens {
  readonly #store: OAuthQueries;
  readonly #box: SecretBox;
  readonly #http: Pick<ProviderHttp, 'token'>;
  readonly #owner: string;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #waitMs: number;
  readonly #now: () => number;
  readonly #options: OAuthTokensOptions;
  /** Refreshes under way in this process, by system key: concurrent runs share one. */
  readonly #flights = new Map<string, Promise<AccessToken>>();

  constructor(options: OAuthTokensOptions) {
    this.#options = options;
    this.#store = options.store;
    this.#box = new SecretBox(deriveKey(options.masterKey, OAUTH_TOKENS_KEY_PURPOSE));
    this.#http = options.http;
    this.#owner = options.owner ?? `${process.pid}/${randomBytes(6).toString('hex')}`;
    this.#leaseMs = options.leaseMs ?? 30_000;
    this.#pollMs = options.pollMs ?? 50;
    this.#waitMs = options.waitMs ?? 45_000;
    this.#now = options.now ?? Date.now;
  }

  /**
   * The current access token of the system: the cached one while it is valid, else a new one (one
   * request for all callers). `rejected`: a token the target refused (401), which is never handed out again.
   */
  async accessToken(ref: OAuthSystemRef, rejected?: RejectedToken): Promise<AccessToken> {
    const rejectedHash =
      rejected === undefined
        ? undefined
        : typeof rejected === 'string'
          ? accessTokenHash(rejected)
          : rejected.sha256.toLowerCase();
    const row = await this.#store.getToken(ref.key);
    const usable = this.#usable(ref, row, rejectedHash);
    if (usable) return usable;
    this.#assertAuthorized(ref, row);
    let flight = this.#flights.get(ref.key);
    if (!flight) {
      flight = this.#refresh(ref, rejectedHash).finally(() => this.#flights.delete(ref.key));
      this.#flights.set(ref.key, flight);
    }
    return flight;
  }

  /** Status, expiry and scopes of the system's token; never the token. */
  async view(ref: OAuthSystemRef): Promise<OAuthView> {
    const row = await this.#store.getToken(ref.key);
    const grant = grantOf(ref.settings, row?.grantType as GrantType | undefined);
    if (!row || row.fingerprint !== settingsFingerprint(ref.settings)) {
      return { status: grant === 'authorization_code' ? 'not_authorized' : 'none' };
    }
    if (row.status === 'needs_reauthorization') return { status: 'needs_reauthorization' };
    if (row.status !== 'active' || !row.sealed) {
      return { status: grant === 'authorization_code' ? 'not_authorized' : 'none' };
    }
    const expired = row.expiresAt !== undefined && this.#now() >= row.expiresAt;
    return {
      status: expired ? 'expired' : 'active',
      ...(row.expiresAt !== undefined ? { expiresAt: new Date(row.expiresAt).toISOString() } : {}),
      ...(row.scopes ? { scopes: row.scopes } : {}),
    };
  }

  /** Drops the cached tokens and the authorization flows under way of a system variant (it was deleted). */
  async forget(ref: Pick<OAuthSystemRef, 'key'>): Promise<void> {
    await this.#store.deleteToken(ref.key);
    await this.#store.deleteStates(ref.key);
  }

  /**
   * Starts an authorization-code flow: stores the state (bound to the system variant and the API key that
   * asked, single use, 10 minutes) with its PKCE verifier, and answers the provider's URL to send a user to.
   */
  async startAuthorization(
    ref: OAuthSystemRef,
    opts: { apiKeyId: string; redirectUri: string; returnTo?: string | undefined },
  ): Promise<{ authorizationUrl: string; redirectUri: string; expiresAt: string }> {
    const { settings } = ref;
    if (!settings.authorizationUrl) {
      throw KG_ERR_OAUTH_NOT_CONFIGURED(ref.systemId, 'its credentials have no authorizationUrl');
    }
    const verifier = newCodeVerifier();
    const state = newState();
    const stateHash = hashState(state);
    const now = this.#now();
    const expiresAt = now + AUTHORIZATION_TTL_MS;
    const sealed: SealedState = {
      verifier,
      redirectUri: opts.redirectUri,
      fingerprint: settingsFingerprint(settings),
      ...(opts.returnTo ? { returnTo: opts.returnTo } : {}),
    };
    await this.#store.insertState(
      {
        stateHash,
        systemKey: ref.key,
        systemId: ref.systemId,
        environment: ref.environment,
        apiKeyId: opts.apiKeyId,
        sealed: this.#box.seal(Buffer.from(JSON.stringify(sealed)), `kubeglue/oauth-state/${stateHash}`),
        expiresAt,
      },
      now,
    );
    const url = new URL(settings.authorizationUrl);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', settings.clientId);
    url.searchParams.set('redirect_uri', opts.redirectUri);
    if (settings.scopes?.trim()) url.searchParams.set('scope', settings.scopes.trim());
    if (settings.audience) url.searchParams.set('audience', settings.audience);
    url.searchParams.set('state', state);
    url.searchParams.set('code_challenge', codeChallengeS256(verifier));
    url.searchParams.set('code_challenge_method', 'S256');
    return {
      authorizationUrl: url.toString(),
      redirectUri: opts.redirectUri,
      expiresAt: new Date(expiresAt).toISOString(),
    };
  }

  /**
   * The callback's first step: takes the flow `state` names (once: a state is never usable again, whatever
   * follows), if it is known, fresh and readable.
   */
  async takeAuthorization(state: string): Promise<ReturnedAuthorization | undefined> {
    const stateHash = hashState(state);
    const row = await this.#store.takeState(stateHash);
    if (!row || row.expiresAt < this.#now()) return undefined;
    try {
      const sealed = JSON.parse(
        this.#box.open(row.sealed, `kubeglue/oauth-state/${stateHash}`).toString('utf8'),
      ) as SealedState;
      return { row, sealed };
    } catch {
      return undefined;
    }
  }

  /**
   * The callback: checks the taken flow's API key still exists, exchanges the code with the verifier, and
   * stores the tokens. `resolve` finds the system variant the state names now.
   */
  async completeAuthorization(input: {
    code: string;
    flow: ReturnedAuthorization;
    resolve: (systemId: string, environment: Environment) => Promise<OAuthSystemRef | undefined>;
    keyExists: (apiKeyId: string) => Promise<boolean>;
  }): Promise<{ systemId: string; environment: Environment; oauth: OAuthView }> {
    const { row, sealed } = input.flow;
    if (!(await input.keyExists(row.apiKeyId))) throw KG_ERR_OAUTH_STATE_INVALID();
    const environment = row.environment as Environment;
    const ref = await input.resolve(row.systemId, environment);
    if (!ref || ref.key !== row.systemKey) throw KG_ERR_OAUTH_STATE_INVALID();
    // The client or scopes changed since the flow started: the code was issued for other settings.
    if (sealed.fingerprint !== settingsFingerprint(ref.settings)) throw KG_ERR_OAUTH_STATE_INVALID();
    const answer = await this.#ask(ref, {
      grant: 'authorization_code',
      code: input.code,
      redirectUri: sealed.redirectUri,
      codeVerifier: sealed.verifier,
    });
    if (!answer.ok) throw KG_ERR_OAUTH_TOKEN_REFUSED(ref.systemId, answer.error, answer.description);
    await this.#store.putToken(ref.key, this.#write(ref, 'authorization_code', answer.grant, undefined));
    await this.#options.onAuthorized?.(ref);
    return { systemId: ref.systemId, environment, oauth: await this.view(ref) };
  }

  /** The provider's error answer of a callback (`?error=access_denied`; its state is taken already). */
  denied(error: string, description?: string): ApiError {
    return KG_ERR_OAUTH_DENIED(error.slice(0, 64), description?.slice(0, 300));
  }

  #usable(
    ref: OAuthSystemRef,
    row: OAuthTokenRow | undefined,
    rejectedHash?: string,
  ): AccessToken | undefined {
    if (row?.status !== 'active' || !row.sealed) return undefined;
    if (row.fingerprint !== settingsFingerprint(ref.settings)) return undefined;
    if (needsRefresh(row.expiresAt, this.#now())) return undefined;
    if (rejectedHash !== undefined && row.tokenHash === rejectedHash) return undefined;
    const tokens = this.#open(ref, row.sealed);
    if (!tokens) return undefined;
    return {
      accessToken: tokens.accessToken,
      ...(row.expiresAt !== undefined ? { expiresAt: row.expiresAt } : {}),
    };
  }

  /** Throws when only the user can help: refused refresh token, or an authorization-code system never authorized. */
  #assertAuthorized(ref: OAuthSystemRef, row: OAuthTokenRow | undefined): void {
    const current = row?.fingerprint === settingsFingerprint(ref.settings);
    if (current && row?.status === 'needs_reauthorization') {
      throw KG_ERR_OAUTH_REAUTHORIZATION_REQUIRED(ref.systemId, ref.environment);
    }
    const grant = grantOf(ref.settings, current ? (row?.grantType as GrantType | undefined) : undefined);
    if (grant === 'authorization_code' && !(current && row?.sealed)) {
      throw KG_ERR_OAUTH_NOT_AUTHORIZED(ref.systemId, ref.environment);
    }
  }

  async #refresh(ref: OAuthSystemRef, rejectedHash: string | undefined): Promise<AccessToken> {
    const giveUpAt = this.#now() + this.#waitMs;
    for (;;) {
      const now = this.#now();
      if (await this.#store.lockToken(ref.key, this.#owner, now, now + this.#leaseMs)) {
        try {
          // Another process may have finished a refresh between our read and our lease.
          const row = await this.#store.getToken(ref.key);
          const usable = this.#usable(ref, row, rejectedHash);
          if (usable) return usable;
          this.#assertAuthorized(ref, row);
          return await this.#obtain(ref, row);
        } finally {
          // A no-op when the lease was released with the new token.
          await this.#store.releaseLock(ref.key, this.#owner);
        }
      }
      await sleep(this.#pollMs);
      const row = await this.#store.getToken(ref.key);
      const usable = this.#usable(ref, row, rejectedHash);
      if (usable) return usable;
      this.#assertAuthorized(ref, row);
      if (this.#now() > giveUpAt) throw KG_ERR_OAUTH_REFRESH_BUSY(ref.systemId);
    }
  }

  /** Holding the lease: asks the provider and stores the answer. */
  async #obtain(ref: OAuthSystemRef, row: OAuthTokenRow | undefined): Promise<AccessToken> {
    const current = row?.fingerprint === settingsFingerprint(ref.settings);
    const grant = grantOf(ref.settings, current ? (row?.grantType as GrantType | undefined) : undefined);
    let previousRefresh: string | undefined;
    let answer: TokenAnswer;
    if (grant === 'authorization_code') {
      previousRefresh = current && row?.sealed ? this.#open(ref, row.sealed)?.refreshToken : undefined;
      if (!previousRefresh) {
        // An access token without a refresh token that expired: only a new authorization helps.
        await this.#store.setLockedStatus(ref.key, this.#owner, 'needs_reauthorization', this.#now());
        await this.#options.onNeedsReauthorization?.(ref);
        throw KG_ERR_OAUTH_REAUTHORIZATION_REQUIRED(ref.systemId, ref.environment);
      }
      answer = await this.#ask(ref, { grant: 'refresh_token', refreshToken: previousRefresh });
      if (!answer.ok && answer.error === 'invalid_grant') {
        // Revoked, expired or already rotated: asking again cannot help, so nothing retries it.
        await this.#store.setLockedStatus(ref.key, this.#owner, 'needs_reauthorization', this.#now());
        await this.#options.onNeedsReauthorization?.(ref);
        throw KG_ERR_OAUTH_REAUTHORIZATION_REQUIRED(ref.systemId, ref.environment);
      }
    } else {
      answer = await this.#ask(ref, { grant: 'client_credentials' });
    }
    if (!answer.ok) throw KG_ERR_OAUTH_TOKEN_REFUSED(ref.systemId, answer.error, answer.description);
    const write = this.#write(ref, grant, answer.grant, previousRefresh);
    const saved = await this.#store.saveLockedToken(ref.key, this.#owner, write);
    if (!saved) {
      // Our lease ran out (or an authorization replaced the grant): whatever is stored now wins.
      const usable = this.#usable(ref, await this.#store.getToken(ref.key));
      if (usable) return usable;
    }
    return {
      accessToken: answer.grant.accessToken,
      ...(write.expiresAt !== undefined ? { expiresAt: write.expiresAt } : {}),
    };
  }

  #write(ref: OAuthSystemRef, grant: GrantType, answer: TokenGrant, previousRefresh: string | undefined) {
    const now = this.#now();
    // Rotation: a new refresh token replaces the old one; without one in the answer the old one stays valid.
    const refreshToken = answer.refreshToken ?? previousRefresh;
    const tokens: SealedTokens = {
      accessToken: answer.accessToken,
      ...(refreshToken ? { refreshToken } : {}),
    };
    return {
      grantType: grant,
      fingerprint: settingsFingerprint(ref.settings),
      sealed: this.#box.seal(Buffer.from(JSON.stringify(tokens)), context(ref)),
      tokenHash: accessTokenHash(answer.accessToken),
      expiresAt: answer.expiresIn !== undefined ? now + answer.expiresIn * 1000 : undefined,
      scopes: normaliseScopes(answer.scope ?? ref.settings.scopes) || undefined,
      status: 'active' as const,
      updatedAt: now,
    };
  }

  async #ask(ref: OAuthSystemRef, grant: GrantRequest): Promise<TokenAnswer> {
    try {
      return await this.#http.token(ref.settings, grant, ref.allowedNetworks);
    } catch (error) {
      if (error instanceof ProviderUnreachableError) {
        throw KG_ERR_OAUTH_PROVIDER_UNREACHABLE(ref.systemId, error.message);
      }
      throw error;
    }
  }

  #open(ref: OAuthSystemRef, sealed: Uint8Array): SealedTokens | undefined {
    try {
      return JSON.parse(this.#box.open(sealed, context(ref)).toString('utf8')) as SealedTokens;
    } catch {
      // Another master key or altered data: treated as no token, so a new one is fetched (or authorized).
      return undefined;
    }
  }
}

function context(ref: Pick<OAuthSystemRef, 'key'>): string {
  return `kubeglue/oauth-token/${ref.key}`;
}
