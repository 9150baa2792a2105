/**
 * How an HTTP step follows a redirect (pure). The client follows redirects itself rather than through
 * undici's interceptor, because that one strips only Authorization, Cookie and Proxy-Authorization on a
 * cross-origin hop: an API-key header, custom credential headers or an API-key query parameter would follow
 * the redirect to the other origin.
 *
 * Rules (the Fetch standard's): 301/302 turn a POST into a GET, 303 turns anything but HEAD into a GET, both
 * without the body; 307/308 keep method and body. A relative Location resolves against the current URL.
 * On a hop to another origin (scheme, host or port), every header that carries a credential and every
 * credential query parameter is dropped, and they stay dropped for the rest of the chain; a 307/308 that
 * would re-send a body carrying a credential to another origin is not followed.
 */

export const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

export interface Hop {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body: string | Uint8Array | undefined;
}

/** What the request knows to be credential carriers, on top of the standard ones. */
export interface CredentialCarriers {
  /** Lower-case header names. */
  headers: ReadonlySet<string>;
  /**
   * Query parameters the original request sent that carry credentials, as name and value: a redirect
   * Location that repeats one loses it, while parameters the server itself put there (a presigned
   * download's signature) stay.
   */
  query: ReadonlyArray<readonly [string, string]>;
  /** Whether the body carries a credential: then a 307/308 to another origin (which re-sends it) is refused. */
  body?: boolean;
}

/** Always credentials, whoever set them. */
const STANDARD_CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie'];
/** Headers that describe a body; gone with the body. */
const BODY_HEADERS = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-location',
];

function stripQuery(url: URL, pairs: CredentialCarriers['query']): void {
  const carried = (name: string, value: string) => pairs.some(([n, v]) => n === name && v === value);
  const kept = [...url.searchParams].filter(([name, value]) => !carried(name, value));
  // Only when something goes: re-serialising changes the encoding of the rest.
  if (kept.length !== [...url.searchParams].length) url.search = new URLSearchParams(kept).toString();
}

export class RedirectError extends Error {
  override name = 'RedirectError';
}

function without(headers: Record<string, string>, names: ReadonlySet<string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !names.has(name.toLowerCase())));
}

/**
 * The request to send after `status` with `location`, or a RedirectError when the Location is unusable.
 * `carriers` names the credential headers and parameters of the original request.
 */
export function nextHop(current: Hop, status: number, location: string, carriers: CredentialCarriers): Hop {
  let url: URL;
  try {
    url = new URL(location, current.url);
  } catch {
    throw new RedirectError(`the redirect Location is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RedirectError(
      `the redirect goes to a ${url.protocol.slice(0, -1)} URL; only http(s) is followed`,
    );
  }
  let { method, body, headers } = current;
  const toGet =
    ((status === 301 || status === 302) && method === 'POST') || (status === 303 && method !== 'HEAD');
  if (toGet) {
    method = 'GET';
    body = undefined;
    headers = without(headers, new Set(BODY_HEADERS));
  }
  if (url.origin !== current.url.origin) {
    if (body !== undefined && carriers.body) {
      throw new RedirectError(
        `the ${status} redirect to ${url.origin} would re-send a body that carries a credential; not followed`,
      );
    }
    headers = without(headers, new Set([...STANDARD_CREDENTIAL_HEADERS, ...carriers.headers]));
    stripQuery(url, carriers.query);
    // Credentials in userinfo never follow a redirect either.
    url.username = '';
    url.password = '';
  }
  return { method, url, headers, body };
}
