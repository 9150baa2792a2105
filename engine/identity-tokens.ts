/**
 * Outbound identity tokens during one run (docs/operations.md#outbound-identity): a request step that names
 * `<<kubeglue_identity_jwt>>` (or superglue's `<<sg_auth_jwt>>`) in its headers, query or body gets a JWT
 * signed by the run's host whose audience is the origin the request goes to, and no other origin's. A token
 * is reused for that origin until less than half of its life is left. Each token joins the run's redaction
 * like a credential, so it is never in step results, errors, logs or recordings, and a header or parameter
 * that carries it is dropped on a redirect to another origin (http-redirect.ts). No I/O of its own: the
 * source is injected.
 */
import type { RequestStepConfig } from '../contract/api/tool.ts';
import type { JsonObject, JsonValue } from '../contract/json.ts';
import type { Redactor } from './redact.ts';
import type { Evaluate } from './template.ts';
import type { IdentityGrant, IdentityTokenSource } from './types.ts';

/** The names a template uses for the token: kubeglue's, and superglue's spelling of the same. */
export const IDENTITY_TOKEN_NAMES = ['kubeglue_identity_jwt', 'sg_auth_jwt'] as const;
/** What the token reads as wherever it would otherwise appear. */
export const IDENTITY_TOKEN_PLACEHOLDER = `<<${IDENTITY_TOKEN_NAMES[0]}>>`;

const NAMED = new RegExp(`<<\\s*(?:${IDENTITY_TOKEN_NAMES.join('|')})\\s*>>`);

/** Whether any of these template texts names the token (as a name: functions never see it). */
export function namesIdentityToken(...parts: Array<JsonValue | undefined>): boolean {
  return parts.some(
    (part) => part !== undefined && NAMED.test(typeof part === 'string' ? part : JSON.stringify(part)),
  );
}

/** Per step config (the same object for every page and loop item): whether it names the token. */
const namedBy = new WeakMap<RequestStepConfig, boolean>();

/** Whether a request step's headers, query, body or GraphQL variables name the token; looked at once per step. */
export function stepNamesIdentityToken(config: RequestStepConfig): boolean {
  let names = namedBy.get(config);
  if (names === undefined) {
    names = namesIdentityToken(config.headers, config.queryParams, config.body, config.graphql?.variables);
    namedBy.set(config, names);
  }
  return names;
}

/** Template functions evaluate without the token: only its name, written out, sends it. */
export function withoutIdentityToken(evaluate: Evaluate): Evaluate {
  return (source, args) =>
    evaluate(
      source,
      args.map((arg) => {
        if (arg === null || typeof arg !== 'object' || Array.isArray(arg)) return arg;
        const copy: JsonObject = { ...arg };
        for (const name of IDENTITY_TOKEN_NAMES) delete copy[name];
        return copy;
      }),
    );
}

export class IdentityTokens {
  readonly #redactor: Redactor;
  readonly #source: IdentityTokenSource | undefined;
  readonly #now: () => number;
  readonly #granted = new Map<string, IdentityGrant & { issuedAt: number }>();
  readonly #asking = new Map<string, Promise<string>>();

  constructor(redactor: Redactor, source: IdentityTokenSource | undefined, now: () => number) {
    this.#redactor = redactor;
    this.#source = source;
    this.#now = now;
  }

  /** The template names bound to a token for a request to `origin`. */
  async sourceData(origin: string): Promise<JsonObject> {
    const token = await this.#tokenFor(origin);
    return Object.fromEntries(IDENTITY_TOKEN_NAMES.map((name) => [name, token]));
  }

  #tokenFor(origin: string): Promise<string> {
    const granted = this.#granted.get(origin);
    const now = this.#now();
    if (granted && now < granted.expiresAt - (granted.expiresAt - granted.issuedAt) / 2) {
      return Promise.resolve(granted.token);
    }
    // Concurrent loop items and pages to one origin share one question.
    let asking = this.#asking.get(origin);
    if (!asking) {
      asking = this.#ask(origin, now).finally(() => this.#asking.delete(origin));
      this.#asking.set(origin, asking);
    }
    return asking;
  }

  async #ask(origin: string, now: number): Promise<string> {
    if (!this.#source) {
      throw new Error(
        `${IDENTITY_TOKEN_PLACEHOLDER} comes from the kubeglue API, which this run cannot reach`,
      );
    }
    const grant = await this.#source(origin);
    this.#redactor.add(grant.token, IDENTITY_TOKEN_PLACEHOLDER);
    this.#granted.set(origin, { ...grant, issuedAt: now });
    return grant.token;
  }
}
