/**
 * http(s) URLs: the only ones kubeglue keeps where a browser is sent (an OAuth authorization URL, the
 * redirect URI) or where kubeglue itself connects to read a web page (a token URL, documentation,
 * notifications). Any other scheme is refused when it is saved: `javascript:`, `data:` or `vbscript:`
 * would run in the page that opens it, and `file:` or `ftp:` read no web page. Without zod, so the
 * dashboard checks with the same function before it navigates.
 */

/** The rule as a pattern (OpenAPI and the CRDs): the scheme, lower case, and `//`. */
export const HTTP_URL_PATTERN = '^https?://';

const HTTP_URL = new RegExp(HTTP_URL_PATTERN);

/** Whether `text` is an absolute http(s) URL with a host. */
export function isHttpUrl(text: string): boolean {
  // Checked on the text first: the URL parser drops leading spaces and control characters, so
  // " javascript:…" would parse as a javascript: URL a browser still runs.
  if (!HTTP_URL.test(text)) return false;
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}
