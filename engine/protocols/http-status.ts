/**
 * How a non-2xx HTTP answer reads as a step error, `HTTP 404 GET https://…: <body>`, written by
 * HttpStatusError (http.ts) and read back by what judges a step by its error's status (a connection test,
 * runs/connection-test.ts). Pure: no HTTP client is loaded by reading it.
 */

export function httpStatusMessage(
  status: number,
  method: string,
  maskedUrl: string,
  snippet: string,
): string {
  return `HTTP ${status} ${method} ${maskedUrl}: ${snippet}`;
}

/** The status of a step error that an HTTP answer made (httpStatusMessage), else undefined. */
export function statusOfHttpStepError(error: string): number | undefined {
  const match = /^HTTP ([1-5]\d\d) [A-Z]+ /.exec(error);
  return match ? Number(match[1]) : undefined;
}
