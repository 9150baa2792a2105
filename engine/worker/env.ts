/**
 * The environment a pool worker process starts with: only what Node and the libraries it loads need,
 * never the parent's secrets (KUBEGLUE_MASTER_KEY, KUBEGLUE_ADMIN_KEY, KUBEGLUE_DATABASE_URL, cloud
 * credentials…). A worker runs user code in its sandbox; whatever escaped it would find nothing to take.
 * The settings the worker does need (sandbox limits, egress policy) are passed as explicit values.
 */

/** Inherited as is: search path, home and temp dirs, locale and time zone, TLS trust, libuv threads. */
const INHERITED = new Set([
  'PATH',
  'HOME',
  'TMPDIR',
  'TMP',
  'TEMP',
  'TZ',
  'LANG',
  'LANGUAGE',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'UV_THREADPOOL_SIZE',
  // Windows: Node needs these to find its system libraries.
  'SYSTEMROOT',
  'WINDIR',
]);

/** Node's own settings (NODE_OPTIONS, NODE_EXTRA_CA_CERTS…) and the locale categories (LC_ALL, LC_CTYPE…). */
const INHERITED_PREFIXES = ['NODE_', 'LC_'];

export function workerEnvironment(
  parent: Readonly<Record<string, string | undefined>>,
  explicit: Readonly<Record<string, string>>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) {
    if (value === undefined) continue;
    if (INHERITED.has(name) || INHERITED_PREFIXES.some((prefix) => name.startsWith(prefix)))
      env[name] = value;
  }
  return { ...env, ...explicit };
}
