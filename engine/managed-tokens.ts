/**
 * OAuth access tokens of tokenManaged systems during one run: asked for when a step of the system first
 * sends a request, again when it is about to expire, and once more when the target answers 401. Each token
 * joins the run's redaction like every other credential. No I/O of its own: the source is injected.
 */
import type { CredentialScope } from './credentials.ts';
import type { AccessTokenSource, GrantedToken } from './types.ts';

/** A token this close to expiry is replaced before a request rather than sent to be refused. */
const EXPIRY_MARGIN_MS = 30_000;

export interface TokenKeeper {
  /** Makes sure the system's `accessToken` credential holds a current token (no-op for other systems). */
  ensure(systemId: string): Promise<void>;
  /** After a 401: asks for a token other than the one sent; whether a new one is in place. */
  replace(systemId: string): Promise<boolean>;
}

export class ManagedTokens implements TokenKeeper {
  readonly #scope: CredentialScope;
  readonly #source: AccessTokenSource | undefined;
  readonly #now: () => number;
  readonly #granted = new Map<string, GrantedToken>();
  readonly #asking = new Map<string, Promise<void>>();

  constructor(scope: CredentialScope, source: AccessTokenSource | undefined, now: () => number) {
    this.#scope = scope;
    this.#source = source;
    this.#now = now;
  }

  /** Managed, and no accessToken given at run time (a runtime token is used as is). */
  #managed(systemId: string): boolean {
    const entry = this.#scope.bySystem.get(systemId);
    if (!entry?.system.tokenManaged) return false;
    return this.#granted.has(systemId) || entry.values.accessToken === undefined;
  }

  async ensure(systemId: string): Promise<void> {
    if (!this.#managed(systemId)) return;
    const granted = this.#granted.get(systemId);
    if (granted && (granted.expiresAt === undefined || this.#now() < granted.expiresAt - EXPIRY_MARGIN_MS)) {
      return;
    }
    await this.#ask(systemId, granted?.accessToken);
  }

  async replace(systemId: string): Promise<boolean> {
    if (!this.#managed(systemId)) return false;
    const before = this.#granted.get(systemId)?.accessToken;
    await this.#ask(systemId, before);
    return this.#granted.get(systemId)?.accessToken !== before;
  }

  /** Concurrent loop items of one step share one question. */
  #ask(systemId: string, rejected: string | undefined): Promise<void> {
    let asking = this.#asking.get(systemId);
    if (!asking) {
      asking = this.#fetch(systemId, rejected).finally(() => this.#asking.delete(systemId));
      this.#asking.set(systemId, asking);
    }
    return asking;
  }

  async #fetch(systemId: string, rejected: string | undefined): Promise<void> {
    if (!this.#source) {
      throw new Error(
        `system '${systemId}' gets its OAuth access token from the API, which this run cannot reach`,
      );
    }
    const token = await this.#source(systemId, rejected);
    const entry = this.#scope.bySystem.get(systemId);
    if (!entry) return;
    this.#scope.redactor.add(token.accessToken, `<<${systemId}_accessToken>>`);
    entry.values.accessToken = token.accessToken;
    this.#granted.set(systemId, token);
  }
}
