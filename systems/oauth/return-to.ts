/**
 * Where the OAuth callback sends the browser when a flow started with `returnTo` ends (the dashboard's
 * system page): only a page of the server's own origin, so the callback, which needs no API key, can never
 * be used to send a user to another site (an open redirect). Pure: no I/O.
 */
import { KG_ERR_OAUTH_RETURN_INVALID } from '../../contract/api/errors.ts';

/**
 * `returnTo` (a path, or a URL) as an absolute URL of `publicUrl`'s origin; throws
 * KG_ERR_OAUTH_RETURN_INVALID for anything that resolves elsewhere (`//other.example`, `/\other.example`,
 * another scheme) or carries user info.
 */
export function resolveReturnTo(returnTo: string, publicUrl: string): string {
  const own = new URL(publicUrl);
  let url: URL;
  try {
    url = new URL(returnTo, own);
  } catch {
    throw KG_ERR_OAUTH_RETURN_INVALID(own.origin);
  }
  if (url.origin !== own.origin || url.username || url.password) {
    throw KG_ERR_OAUTH_RETURN_INVALID(own.origin);
  }
  url.hash = '';
  return url.href;
}

/** The outcome of a flow as the page it returns to reads it: `oauth=connected`, or `oauth=failed&error=<code>`. */
export function returnLocation(
  returnTo: string,
  outcome: { connected: true } | { connected: false; code: string },
): string {
  const url = new URL(returnTo);
  url.searchParams.set('oauth', outcome.connected ? 'connected' : 'failed');
  if (outcome.connected) url.searchParams.delete('error');
  else url.searchParams.set('error', outcome.code);
  return url.href;
}
