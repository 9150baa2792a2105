/**
 * What every connection protocol's step does the same way: stop waiting when the run is cancelled or its
 * deadline passes (the protocol then stops the work on the server its own way), and keep secrets out of
 * the messages it builds from a server's or a library's errors.
 */

/**
 * Rejects with `aborted()` when the signal aborts or `timeout()` when the deadline passes, whichever first;
 * `dispose` stops watching. Race it against the step's work.
 */
export function watchdog(
  signal: AbortSignal,
  deadline: number,
  errors: { aborted: () => Error; timeout: () => Error },
): { fired: Promise<never>; dispose(): void } {
  let dispose = (): void => {};
  const fired = new Promise<never>((_, reject) => {
    const onAbort = (): void => reject(errors.aborted());
    const timer = setTimeout(() => reject(errors.timeout()), Math.max(0, deadline - Date.now()));
    signal.addEventListener('abort', onAbort, { once: true });
    dispose = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
  });
  fired.catch(() => {});
  return { fired, dispose: () => dispose() };
}

/** The password of a URL's userinfo (`scheme://user:password@`), whatever the scheme. */
const USERINFO_PASSWORD = /([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*):[^@\s]*@/gi;

/**
 * `text` without passwords of connection URLs and without `secrets` (and their URL-encoded forms). Very
 * short secrets would mangle ordinary words; those are left to the engine's redaction of the run's values.
 */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text.replace(USERINFO_PASSWORD, '$1:***@');
  for (const secret of secrets) {
    if (secret.length < 4) continue;
    out = out.replaceAll(secret, '***');
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret) out = out.replaceAll(encoded, '***');
  }
  return out;
}
