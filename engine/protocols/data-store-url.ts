/** What the Postgres, MySQL and Redis steps read from their URLs alike, before each reads its own parts. */

/** A data store protocol as its URLs name it: `MySQL`, with the schemes `mysql:` and `mariadb:`. */
export interface DataStoreScheme {
  name: string;
  schemes: readonly string[];
}

/**
 * A data store step's URL parsed and its scheme checked. The URL parser's own error repeats its input,
 * password included, so a refusal names only the protocol.
 */
export function parseDataStoreUrl(
  url: string,
  store: DataStoreScheme,
  invalid: (message: string) => Error,
): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid(`Invalid ${store.name} URL`);
  }
  if (!store.schemes.includes(parsed.protocol)) {
    throw invalid(`Not a ${store.name} URL (scheme ${parsed.protocol})`);
  }
  return parsed;
}

/** The URL's host as a connection takes it: percent-decoded, an IPv6 address without its brackets. */
export function decodedHost(parsed: URL): string {
  return decodeURIComponent(parsed.hostname).replace(/^\[(.*)\]$/, '$1');
}
