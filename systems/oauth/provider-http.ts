/**
 * Calls to OAuth providers (token endpoint, discovery document) through the egress guard, with a time
 * limit and a size limit. Nothing here logs or throws a token: errors name the host and the RFC error only.
 */
import { Agent, request } from 'undici';
import { discardBody } from '../../engine/protocols/discard-body.ts';
import { EgressGuard, type EgressPolicy } from '../../engine/protocols/egress-policy.ts';
import { egressConnector } from '../../engine/protocols/egress-socket.ts';
import type { OAuthSettings, TokenAuthMethod } from './settings.ts';
import { buildTokenRequest, chooseAuthMethod, type GrantRequest } from './token-request.ts';
import { parseTokenAnswer, type TokenAnswer } from './token-response.ts';

const MAX_ANSWER_BYTES = 256 * 1024;
const DISCOVERY_TTL_MS = 60 * 60_000;
const DISCOVERY_MISS_TTL_MS = 5 * 60_000;

export interface ProviderHttpOptions {
  /** The deployment's egress policy (KUBEGLUE_EGRESS_*): token endpoints are outbound connections too. */
  egress: EgressPolicy;
  timeoutMs?: number;
}

/** What kubeglue reads of an RFC 8414 / OpenID discovery document. */
export interface ProviderMetadata {
  authorizationEndpoint?: string;
  tokenEndpoint?: string;
  authMethods?: string[];
}

/** The token endpoint could not be reached or answered nothing usable (not an RFC error answer). */
export class ProviderUnreachableError extends Error {
  override name = 'ProviderUnreachableError';
}

export class ProviderHttp {
  readonly #agents = new Map<string, Agent>();
  readonly #policy: EgressPolicy;
  readonly #timeoutMs: number;
  readonly #discovery = new Map<
    string,
    { at: number; ttl: number; value: Promise<ProviderMetadata | undefined> }
  >();

  constructor(options: ProviderHttpOptions) {
    this.#policy = options.egress;
    this.#timeoutMs = options.timeoutMs ?? 15_000;
  }

  /** One agent per system network allowance, as steps have (System.allowedNetworks apply here too). */
  #agent(allowedNetworks: readonly string[] | undefined): Agent {
    const guard = new EgressGuard(this.#policy, allowedNetworks ?? []);
    let agent = this.#agents.get(guard.key);
    if (!agent) {
      agent = new Agent({ connect: egressConnector(guard, { timeoutMs: this.#timeoutMs }) });
      this.#agents.set(guard.key, agent);
    }
    return agent;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.#agents.values()].map((agent) => agent.close()));
    this.#agents.clear();
  }

  async #fetch(
    url: string,
    init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string },
    allowedNetworks: readonly string[] | undefined,
  ): Promise<{ status: number; contentType: string | undefined; body: string }> {
    const host = safeHost(url);
    try {
      const response = await request(url, {
        method: init.method,
        headers: init.headers,
        ...(init.body !== undefined ? { body: init.body } : {}),
        dispatcher: this.#agent(allowedNetworks),
        signal: AbortSignal.timeout(this.#timeoutMs),
        maxRedirections: 0,
      } as Parameters<typeof request>[1]);
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body) {
        size += (chunk as Buffer).length;
        if (size > MAX_ANSWER_BYTES) {
          discardBody(response.body);
          throw new ProviderUnreachableError(
            `the answer of ${host} is larger than ${MAX_ANSWER_BYTES} bytes`,
          );
        }
        chunks.push(chunk as Buffer);
      }
      const type = response.headers['content-type'];
      return {
        status: response.statusCode,
        contentType: Array.isArray(type) ? type[0] : type,
        body: Buffer.concat(chunks).toString('utf8'),
      };
    } catch (error) {
      if (error instanceof ProviderUnreachableError) throw error;
      // The error of a connection names the host, never the request body (which carries the secret).
      const reason = error instanceof Error ? error.message : String(error);
      throw new ProviderUnreachableError(`${host} could not be reached: ${reason.slice(0, 200)}`);
    }
  }

  /** Posts a token request; the answer parsed per RFC 6749 (an RFC error answer is a result, not a throw). */
  async token(
    settings: OAuthSettings,
    grant: GrantRequest,
    allowedNetworks?: readonly string[],
  ): Promise<TokenAnswer> {
    const method = await this.authMethod(settings, allowedNetworks);
    const built = buildTokenRequest(settings, grant, method);
    const answer = await this.#fetch(
      settings.tokenUrl,
      { method: 'POST', headers: built.headers, body: built.body },
      allowedNetworks,
    );
    return parseTokenAnswer(answer.status, answer.contentType, answer.body);
  }

  async authMethod(settings: OAuthSettings, allowedNetworks?: readonly string[]): Promise<TokenAuthMethod> {
    if (settings.tokenAuthMethod) return settings.tokenAuthMethod;
    const metadata = await this.metadata(settings.authorizationUrl ?? settings.tokenUrl, allowedNetworks);
    return chooseAuthMethod(undefined, metadata?.authMethods);
  }

  /**
   * The discovery document of the issuer at the URL's origin (OpenID configuration, else RFC 8414
   * metadata), cached for an hour; undefined when the provider publishes none.
   */
  metadata(url: string, allowedNetworks?: readonly string[]): Promise<ProviderMetadata | undefined> {
    let origin: string;
    try {
      origin = new URL(url).origin;
    } catch {
      return Promise.resolve(undefined);
    }
    const now = Date.now();
    const cached = this.#discovery.get(origin);
    if (cached && now - cached.at < cached.ttl) return cached.value;
    const entry = {
      at: now,
      ttl: DISCOVERY_TTL_MS,
      value: Promise.resolve<ProviderMetadata | undefined>(undefined),
    };
    entry.value = this.#discover(origin, allowedNetworks).then((found) => {
      if (!found) entry.ttl = DISCOVERY_MISS_TTL_MS;
      return found;
    });
    this.#discovery.set(origin, entry);
    return entry.value;
  }

  async #discover(
    origin: string,
    allowedNetworks?: readonly string[],
  ): Promise<ProviderMetadata | undefined> {
    for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
      try {
        const answer = await this.#fetch(
          `${origin}${path}`,
          { method: 'GET', headers: { accept: 'application/json' } },
          allowedNetworks,
        );
        if (answer.status !== 200) continue;
        const doc = JSON.parse(answer.body) as Record<string, unknown>;
        const methods = doc.token_endpoint_auth_methods_supported;
        return {
          ...(typeof doc.authorization_endpoint === 'string'
            ? { authorizationEndpoint: doc.authorization_endpoint }
            : {}),
          ...(typeof doc.token_endpoint === 'string' ? { tokenEndpoint: doc.token_endpoint } : {}),
          ...(Array.isArray(methods)
            ? { authMethods: methods.filter((m): m is string => typeof m === 'string') }
            : {}),
        };
      } catch {
        // No document, or not JSON: the configured settings stand.
      }
    }
    return undefined;
  }
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the token endpoint';
  }
}
