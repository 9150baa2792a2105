/** Settings of the /v1 server and the store. */
import { z } from 'zod';
import { baseUrl, bool, nonNegativeInt, path, port, positiveInt, text } from './schemas.ts';
import { API_ROLES, SERVER_ROLES, section, setting } from './setting.ts';

export const SERVER = section(
  'The server and the store',
  'Where the /v1 API listens, where runs are stored and the keys that protect them. The Kubernetes roles ' +
    'keep runs in Postgres (`KUBEGLUE_DATABASE_URL` and `KUBEGLUE_MASTER_KEY` are required there); the ' +
    'operator reads the address settings only to build links.',
  {
    host: setting(
      'KUBEGLUE_HOST',
      text,
      '127.0.0.1',
      SERVER_ROLES,
      'address the /v1 API listens on (the metrics port too, unless KUBEGLUE_METRICS_HOST is set)',
    ),
    port: setting(
      'KUBEGLUE_PORT',
      port,
      '8080',
      SERVER_ROLES,
      'port of the /v1 API (`0`: any free port); the operator builds links with it when KUBEGLUE_PUBLIC_URL is unset',
    ),
    publicUrl: setting(
      'KUBEGLUE_PUBLIC_URL',
      baseUrl.optional(),
      undefined,
      SERVER_ROLES,
      'base URL of the API as clients reach it, used in presigned download links and the OAuth callback (unset: http(s)://<host>:<port>)',
    ),
    tls: {
      certFile: setting(
        'KUBEGLUE_TLS_CERT_FILE',
        path.optional(),
        undefined,
        API_ROLES,
        'PEM certificate chain of the /v1 port, which then speaks HTTPS only (gateway agents connect with wss://); with KUBEGLUE_TLS_KEY_FILE, both or neither. The internal runner port stays plain HTTP; behind a TLS-terminating ingress leave both unset',
      ),
      keyFile: setting(
        'KUBEGLUE_TLS_KEY_FILE',
        path.optional(),
        undefined,
        API_ROLES,
        'PEM private key of the /v1 port (see KUBEGLUE_TLS_CERT_FILE); a file that cannot be read stops the start naming the variable',
      ),
    },
    uiDir: setting(
      'KUBEGLUE_UI_DIR',
      path.optional(),
      undefined,
      API_ROLES,
      'directory of the built dashboard served at `/` (unset: `dist/ui` of the installation, which `npm run build` writes and the image contains)',
    ),
    dataDir: setting(
      'KUBEGLUE_DATA_DIR',
      path,
      './.kubeglue',
      ['embedded'],
      'holds the embedded store (kubeglue.sqlite and its -wal file) and, without KUBEGLUE_MASTER_KEY, the generated master key file',
    ),
    databaseUrl: setting(
      'KUBEGLUE_DATABASE_URL',
      z.url().optional(),
      undefined,
      SERVER_ROLES,
      'Postgres to keep runs in (embedded: instead of the embedded store; required by the Kubernetes roles)',
    ),
    adminKey: setting(
      'KUBEGLUE_ADMIN_KEY',
      z.string().optional(),
      undefined,
      API_ROLES,
      'admin API key to create at start, at least 24 characters (unset: one is generated at the first start and logged once)',
    ),
    masterKey: setting(
      'KUBEGLUE_MASTER_KEY',
      z.string().optional(),
      undefined,
      SERVER_ROLES,
      '32 bytes as 64 hex characters or base64: encrypts stored credentials and signs links. Embedded without it, <data dir>/master.key is created (mode 0600), and losing it makes stored credentials unreadable; the Kubernetes roles require it or KUBEGLUE_KEYS_SECRET',
    ),
    keysSecret: setting(
      'KUBEGLUE_KEYS_SECRET',
      text.optional(),
      undefined,
      ['api', 'operator'],
      'the Secret in KUBEGLUE_NAMESPACE holding master-key, admin-key and notify-secret, read when KUBEGLUE_MASTER_KEY is unset: the api creates it with random keys at its first start, the operator waits for it, nothing rewrites it (the chart sets it unless keys.existingSecret)',
    ),
    bodyLimitBytes: setting(
      'KUBEGLUE_BODY_LIMIT_BYTES',
      positiveInt,
      String(10 * 1024 * 1024),
      API_ROLES,
      'largest request body (larger: 413)',
    ),
    namespace: setting(
      'KUBEGLUE_NAMESPACE',
      text,
      'default',
      SERVER_ROLES,
      'namespace of the Tool, System and ToolRun objects',
    ),
    logLevel: setting(
      'KUBEGLUE_LOG_LEVEL',
      z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
      'info',
      API_ROLES,
      "level of the API server's log (requests, errors)",
    ),
    requestLog: setting(
      'KUBEGLUE_REQUEST_LOG',
      bool,
      'true',
      API_ROLES,
      'one info line per API request (method, route pattern, status, ms, trace id; never a query string or a header) and one per run end (run, tool, status, ms); `false` turns both off, as does KUBEGLUE_LOG_LEVEL above `info`',
    ),
    shutdownGraceMs: setting(
      'KUBEGLUE_SHUTDOWN_GRACE_MS',
      positiveInt,
      '10000',
      API_ROLES,
      'on SIGTERM/SIGINT the server stops accepting requests and starting async runs; in-flight runs, sync and async, get this long to finish. Then read-only async runs are handed back to run again after the restart, the others fail saying the server shut down',
    ),
    shutdownDelayMs: setting(
      'KUBEGLUE_SHUTDOWN_DELAY_MS',
      nonNegativeInt,
      '0',
      ['api'],
      'on SIGTERM the api first answers /readyz with 503 and keeps serving for this long, so that Services and load balancers stop sending it requests before it stops listening (the chart sets api.shutdownDelayMs); then KUBEGLUE_SHUTDOWN_GRACE_MS applies',
    ),
    mcpListPageBytes: setting(
      'KUBEGLUE_MCP_LIST_PAGE_BYTES',
      positiveInt,
      String(1024 * 1024),
      API_ROLES,
      "largest `tools/list` answer of the MCP endpoint (/mcp), in bytes of the listed tools' JSON: more tools come in further pages (`nextCursor`), and a tool larger than a page alone is not listed (docs/mcp.md)",
    ),
    maxSyncRuns: setting(
      'KUBEGLUE_MAX_SYNC_RUNS',
      positiveInt,
      '256',
      API_ROLES,
      'synchronous runs one API process executes at once; more are refused at once with 429 and Retry-After',
    ),
    budgetSlotPollMs: setting(
      'KUBEGLUE_BUDGET_SLOT_POLL_MS',
      positiveInt,
      '50',
      API_ROLES,
      "how long a request to a system whose rateLimit.maxConcurrent slots are all in use waits before it asks its budget again (a slot's release is not announced); shorter sees a free slot sooner and costs more store queries (docs/operations.md)",
    ),
  },
);
