/**
 * OAuth for systems: which variant a token belongs to, the authorize and callback steps, the token a run
 * asks for, and the System annotation that tells the operator a system needs re-authorization.
 */

import { KG_ERR_OAUTH_NOT_CONFIGURED, KG_ERR_RUN_SYSTEM_MISSING } from '../../contract/api/errors.ts';
import type { Environment, System } from '../../contract/api/system.ts';
import type { SystemResource } from '../../contract/resources/kinds.ts';
import { OAUTH_STATUS_ANNOTATION } from '../../contract/resources/labels.ts';
import type { EgressPolicy } from '../../engine/protocols/egress-policy.ts';
import type { Store } from '../../store/index.ts';
import { environmentOf } from '../model.ts';
import type { SystemService, SystemVariant } from '../service.ts';
import { ProviderHttp } from './provider-http.ts';
import { resolveReturnTo } from './return-to.ts';
import { OAUTH_NEEDS_REAUTHORIZATION, oauthSettings } from './settings.ts';
import {
  type AccessToken,
  type OAuthSystemRef,
  OAuthTokens,
  type RejectedToken,
  type ReturnedAuthorization,
} from './tokens.ts';

export const OAUTH_CALLBACK_PATH = '/v1/oauth/callback';

export interface SystemOAuthOptions {
  store: Pick<Store, 'oauth' | 'listApiKeys'>;
  masterKey: Buffer;
  namespace: string;
  /** The service's public base URL: its callback is the redirect URI of systems without their own. */
  publicUrl: string;
  egress: EgressPolicy;
  log?: (line: string) => void;
  /** Test hooks: lease and polling of the cross-process refresh. */
  tokens?: { pollMs?: number; leaseMs?: number };
}

export class SystemOAuth {
  readonly tokens: OAuthTokens;
  readonly #http: ProviderHttp;
  readonly #options: SystemOAuthOptions;
  #systems: SystemService | undefined;

  constructor(options: SystemOAuthOptions) {
    this.#options = options;
    this.#http = new ProviderHttp({ egress: options.egress });
    this.tokens = new OAuthTokens({
      store: options.store.oauth,
      masterKey: options.masterKey,
      http: this.#http,
      ...options.tokens,
      onNeedsReauthorization: (ref) => this.#mark(ref, OAUTH_NEEDS_REAUTHORIZATION),
      onAuthorized: (ref) => this.#mark(ref, undefined),
    });
  }

  /** The system service is built with this one's `present`, so it is attached afterwards. */
  attach(systems: SystemService): void {
    this.#systems = systems;
  }

  get #service(): SystemService {
    if (!this.#systems) throw new Error('SystemOAuth used before attach()');
    return this.#systems;
  }

  close(): Promise<void> {
    return this.#http.close();
  }

  ref(variant: SystemVariant): OAuthSystemRef | undefined {
    const { resource, credentials } = variant;
    if (resource.spec.authType !== 'oauth') return undefined;
    const settings = oauthSettings(credentials);
    if (!settings) return undefined;
    return {
      key: this.#key(resource),
      systemId: resource.spec.id,
      environment: environmentOf(resource),
      settings,
      allowedNetworks: resource.spec.allowedNetworks,
    };
  }

  /** The `oauth` field of a system's REST shape (systems whose token kubeglue manages). */
  async present(
    resource: SystemResource,
    credentials: Readonly<Record<string, string>>,
  ): Promise<Partial<System>> {
    if (credentials.accessToken !== undefined) return {};
    const ref = this.ref({ resource, credentials });
    return ref ? { oauth: await this.tokens.view(ref) } : {};
  }

  /** Drops the tokens and pending authorizations of a deleted variant. */
  forget(resource: SystemResource): Promise<void> {
    return this.tokens.forget({ key: this.#key(resource) });
  }

  #key(resource: SystemResource): string {
    return `${this.#options.namespace}/${resource.metadata.name}`;
  }

  /** The token a run in `mode` sends to the system (the run's engine asks through its worker or the internal API). */
  async accessToken(systemId: string, mode: Environment, rejected?: RejectedToken): Promise<AccessToken> {
    const variant = await this.#service.variantForRun(systemId, mode);
    if (!variant) throw KG_ERR_RUN_SYSTEM_MISSING(systemId);
    const ref = this.ref(variant);
    if (!ref)
      throw KG_ERR_OAUTH_NOT_CONFIGURED(
        systemId,
        'it is not an oauth system with clientId, clientSecret and tokenUrl',
      );
    return this.tokens.accessToken(ref, rejected);
  }

  /** Starts a flow; `returnTo`: where the callback sends the browser afterwards (this server's pages only). */
  async authorize(
    systemId: string,
    environment: Environment | undefined,
    apiKeyId: string,
    returnTo?: string,
  ) {
    const back = returnTo === undefined ? undefined : resolveReturnTo(returnTo, this.#options.publicUrl);
    const variant = await this.#service.variantForRequest(systemId, environment);
    const ref = this.ref(variant);
    if (!ref) {
      throw KG_ERR_OAUTH_NOT_CONFIGURED(
        systemId,
        'it needs authType oauth and credentials clientId, clientSecret, tokenUrl and authorizationUrl (http(s) URLs)',
      );
    }
    const redirectUri =
      ref.settings.redirectUri ?? `${this.#options.publicUrl.replace(/\/+$/, '')}${OAUTH_CALLBACK_PATH}`;
    return this.tokens.startAuthorization(ref, { apiKeyId, redirectUri, returnTo: back });
  }

  callback(code: string, flow: ReturnedAuthorization) {
    return this.tokens.completeAuthorization({
      code,
      flow,
      resolve: async (systemId, environment) => {
        try {
          return this.ref(await this.#service.variantForRequest(systemId, environment));
        } catch {
          return undefined;
        }
      },
      keyExists: async (apiKeyId) =>
        (await this.#options.store.listApiKeys()).some((key) => key.id === apiKeyId),
    });
  }

  async #mark(ref: OAuthSystemRef, value: string | undefined): Promise<void> {
    const name = ref.key.slice(ref.key.indexOf('/') + 1);
    try {
      await this.#service.annotate(name, OAUTH_STATUS_ANNOTATION, value);
    } catch (error) {
      // The store holds the status either way; the System condition follows at the next change.
      this.#options.log?.(`could not mark system ${ref.systemId} (${(error as Error).message})`);
    }
  }
}
