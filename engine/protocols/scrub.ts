/**
 * Taking a connection's secrets out of text a driver produced (its error messages may quote the URL or,
 * rarely, the password) before it becomes a step error. The engine's redaction of the run's credential
 * values applies afterwards as well; this catches what the protocol knows and the engine may not (the
 * password as the URL encodes it).
 */

/** The forms a password may appear in: as given and as a URL encodes it. */
export function secretForms(password: string | undefined): string[] {
  return password ? [...new Set([password, encodeURIComponent(password)])] : [];
}

/** `scheme://user:password@` becomes `scheme://user:***@`, and every secret `***`. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let out = text.replace(/([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*):[^@\s]*@/gi, '$1:***@');
  // Very short passwords would mangle ordinary words; those are left to the engine's redaction.
  for (const secret of secrets) if (secret.length >= 4) out = out.replaceAll(secret, '***');
  return out;
}
