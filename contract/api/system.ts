import { isIP } from 'node:net';
import { z } from 'zod';
import { HTTP_URL_PATTERN, isHttpUrl } from '../http-url.ts';
import { Instant, JsonValue } from '../json.ts';
import { STEP_PROTOCOLS } from '../step-protocols.ts';
import { plainText, templateId } from '../text.ts';

// System ids become credential template names (`<<systemId_key>>`) and label values.
export const SystemId = templateId();

export const Environment = z.enum(['dev', 'prod']);
export type Environment = z.infer<typeof Environment>;

export const AuthType = z.enum([
  'none',
  'oauth',
  'apiKey',
  'basic',
  'customHeaders',
  'bearer',
  'botToken',
  'dataStore',
]);
export type AuthType = z.infer<typeof AuthType>;

const secret = z.string().min(1);

const NOT_HTTP_URL =
  'must be an http(s) URL (http://… or https://…): other schemes, such as javascript: or data:, are refused';

/** An absolute http(s) URL (contract/http-url.ts says why no other scheme). */
export const HttpUrl = z
  .string()
  .regex(new RegExp(HTTP_URL_PATTERN), NOT_HTTP_URL)
  .refine(isHttpUrl, NOT_HTTP_URL);

export const OAuthCredentials = z.looseObject({
  clientId: secret,
  clientSecret: secret,
  // Only the authorization-code grant sends a user there; client credentials need the token URL only.
  authorizationUrl: HttpUrl.optional(),
  tokenUrl: HttpUrl,
  scopes: z.string().optional().describe('Space-separated.'),
  audience: z
    .string()
    .optional()
    .describe('Sent as `audience` with client-credentials requests (Auth0 and alike).'),
  redirectUri: HttpUrl.optional(),
  grantType: z.enum(['client_credentials', 'authorization_code']).optional(),
  tokenAuthMethod: z
    .enum(['client_secret_basic', 'client_secret_post'])
    .optional()
    .describe(
      "Client authentication at the token endpoint; default: the provider's discovery document, else basic.",
    ),
});

/** One key; where it goes is decided by `apiKeyHeader` / `apiKeyQueryParam`, else `Authorization: Bearer`. */
export const ApiKeyCredentials = z.looseObject({
  apiKey: secret,
  apiKeyHeader: z.string().optional(),
  apiKeyQueryParam: z.string().optional(),
});
/**
 * Where an API key is sent: a header (with an optional prefix such as `Bearer `), a query parameter or a
 * cookie, under `name`.
 */
export const ApiKeyPlacement = z.strictObject({
  in: z.enum(['header', 'query', 'cookie']),
  name: z.string().min(1),
  prefix: z.string().optional().describe('Put before the key, e.g. "Bearer ".'),
});
export type ApiKeyPlacement = z.infer<typeof ApiKeyPlacement>;

export const BasicCredentials = z.looseObject({ username: secret, password: z.string() });
export const BearerCredentials = z.looseObject({ bearerToken: secret });
export const BotTokenCredentials = z.looseObject({ botToken: secret });
/**
 * `postgresql://`, `mysql://`, `mariadb://`, `mssql://`, `redis(s)://`, `mongodb(+srv)://` URLs, or
 * `sftp://host:port` with username/password, or `smb://host/share` with username/password and the user's
 * `domain`.
 */
export const DataStoreCredentials = z.looseObject({
  url: z.string().optional(),
  username: z.string().optional(),
  password: z.string().optional(),
  domain: z.string().optional(),
  privateKey: z.string().optional(),
  passphrase: z.string().optional(),
});

export const CREDENTIAL_SHAPES = {
  none: z.object({}),
  oauth: OAuthCredentials,
  apiKey: ApiKeyCredentials,
  basic: BasicCredentials,
  customHeaders: z.record(z.string(), z.string()),
  bearer: BearerCredentials,
  botToken: BotTokenCredentials,
  dataStore: DataStoreCredentials,
} as const satisfies Record<AuthType, z.ZodType>;

export const Credentials = z.record(z.string().min(1), z.string());
export type Credentials = z.infer<typeof Credentials>;

export const GatewayRef = z.strictObject({
  tunnelId: z.string().min(1).describe('The tunnel id of a connected gateway agent.'),
  target: z.string().min(1).describe('Name of one of the gateway agent`s configured targets.'),
});

const HOST_NAME = /^(?:\*\.)?[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*$/i;

/**
 * Why `text` is not a network rule, or undefined. A rule is a CIDR (`10.1.0.0/16`, `fd00::/8`), an IP, a
 * host name (`db.internal`), every subdomain of a name (`*.corp.example`), or a unix socket path
 * (`/var/run/postgresql`). The egress policy (KUBEGLUE_EGRESS_ALLOW/DENY) uses the same syntax.
 */
export function networkRuleProblem(raw: string): string | undefined {
  const text = raw.trim();
  if (text === '') return 'an empty entry';
  if (text.startsWith('/')) return undefined;
  const [address = '', bits, extra] = text.split('/');
  const family = isIP(address);
  if (family === 0 && bits === undefined) {
    const name = text.replace(/^\[|\]$/g, '').replace(/\.$/, '');
    return HOST_NAME.test(name)
      ? undefined
      : `'${text}' is neither a CIDR nor a host name (name or *.suffix)`;
  }
  if (family === 0 || extra !== undefined) return `'${text}' is not a CIDR (a.b.c.d/n or an IPv6 prefix)`;
  const max = family === 4 ? 32 : 128;
  if (bits !== undefined && (!/^\d+$/.test(bits) || Number(bits) > max)) {
    return `'${text}' has an invalid prefix length (0-${max})`;
  }
  return undefined;
}

/** Why `text` is not an origin (`scheme://host[:port]`, nothing after it), or undefined. */
export function originProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `'${text}' is not a URL`;
  }
  if (url.hostname === '') return `'${text}' has no host`;
  if (url.username || url.password) return `'${text}' must not contain credentials`;
  if ((url.pathname !== '' && url.pathname !== '/') || url.search || url.hash) {
    return `'${text}' must be an origin only (scheme://host[:port]), without a path or query`;
  }
  return undefined;
}

const NetworkRule = z.string().superRefine((value, ctx) => {
  const problem = networkRuleProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const Origin = z.string().superRefine((value, ctx) => {
  const problem = originProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** Fields a System carries besides its credentials, in the REST shapes and in the resource's spec. */
export const systemSecurityFields = {
  codeAccess: z
    .boolean()
    .optional()
    .describe(
      "Whether tool code may read this system's credentials: transforms (and template functions outside a " +
        "request to the system's origins) get them only when true; otherwise reading one fails naming this " +
        "setting. Request templates to the system's origins (<<id_key>>) work either way. Default false, " +
        'also for systems stored before the setting existed. Turn it on for tools that sign requests in code.',
    ),
  extraOrigins: z
    .array(Origin)
    .max(32)
    .optional()
    .describe(
      "Origins (scheme://host[:port]) besides the base URL's that may receive this system's credentials, " +
        'e.g. a separate upload or token host. A request to any other origin gets no system auth.',
    ),
  allowedNetworks: z
    .array(NetworkRule)
    .max(64)
    .optional()
    .describe(
      'Networks that steps using this system may connect to where the deployment refuses private ' +
        'addresses (KUBEGLUE_EGRESS_PRIVATE=deny): CIDRs (10.1.0.0/16), IPs, host names (db.internal), ' +
        '*.suffix, or unix socket paths. Cloud metadata addresses and KUBEGLUE_EGRESS_DENY stay refused.',
    ),
};

/**
 * A system's rate budget: what every request of every run to it takes from, across replicas, engine workers
 * and runner Pods (kept in the store; docs/operations.md). Each field is optional; none given (`{}`) means
 * no budget.
 */
export const RateLimit = z
  .strictObject({
    requestsPerSecond: z
      .number()
      .positive()
      .max(100_000)
      .optional()
      .describe('Requests per second the system is sent at most, on average.'),
    burst: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .optional()
      .describe('Requests that may go at once after a quiet spell (default 1: evenly spaced at the rate).'),
    maxConcurrent: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .optional()
      .describe('Requests in flight to the system at most at any moment.'),
  })
  .superRefine((value, ctx) => {
    if (value.burst !== undefined && value.requestsPerSecond === undefined) {
      ctx.addIssue({ code: 'custom', path: ['burst'], message: 'burst needs requestsPerSecond' });
    }
  })
  .meta({ id: 'RateLimit' });
export type RateLimit = z.infer<typeof RateLimit>;

/** Whether a rate limit limits anything (an empty one is the same as none). */
export function isLimited(limit: RateLimit | undefined): limit is RateLimit {
  return limit?.requestsPerSecond !== undefined || limit?.maxConcurrent !== undefined;
}

export const systemFields = {
  name: plainText(z.string().max(256)).optional().describe('Display name.'),
  url: z
    .string()
    .optional()
    .describe("Base URL; steps' relative URLs resolve against it, its origin receives the credentials."),
  documentationUrl: z
    .string()
    .regex(new RegExp(`^$|${HTTP_URL_PATTERN}`), NOT_HTTP_URL)
    .refine((url) => url === '' || isHttpUrl(url), NOT_HTTP_URL)
    .optional()
    .describe(
      'Where the API of the system is documented, an http(s) URL (empty: none). Fetched and processed in the ' +
        'background (OpenAPI/Swagger, a doc site, HTML, PDF, zip, Markdown, text); progress in `documentation`.',
    ),
  documentationKeywords: z
    .array(z.string().trim().min(1).max(100))
    .max(50)
    .optional()
    .describe('Keep only the documentation sections (and OpenAPI operations) that mention one of these.'),
  authType: AuthType.optional().describe(
    'How credentials are sent: none, oauth, apiKey, basic, customHeaders, bearer, botToken, dataStore.',
  ),
  gateway: GatewayRef.optional().describe('Reach the system through a gateway agent instead of directly.'),
  rateLimit: RateLimit.optional().describe(
    'The budget every request to the system takes from, across all runs and replicas: ' +
      '{requestsPerSecond, burst, maxConcurrent}, each optional; {} removes it. Absent: unlimited.',
  ),
  ...systemSecurityFields,
};

/** superglue's authentication types, as its clients send and display them. */
export const SuperglueAuthenticationType = z.enum([
  'none',
  'api_key',
  'basic_auth',
  'oauth2',
  'connection_string',
]);
export type SuperglueAuthenticationType = z.infer<typeof SuperglueAuthenticationType>;

const accepted = (what: string) => `Accepted for superglue's clients; ${what}`;

/**
 * Fields superglue's clients send in system bodies (`sg system create|edit`). kubeglue keeps its own model
 * (authType, credentials, gateway): `authentication.type` sets authType when the body gives none, the
 * others are accepted and not stored.
 */
export const superglueSystemFields = {
  authentication: z
    .looseObject({ type: SuperglueAuthenticationType })
    .optional()
    .describe(
      accepted(
        'without authType, its type sets it: none → none, basic_auth → basic, oauth2 → oauth, ' +
          'connection_string → dataStore, api_key → bearer / botToken / apiKey after the credential given ' +
          '(bearerToken, botToken, apiKey), else no authType (credentials only reach steps as <<id_key>>). ' +
          'Nothing else of it is stored.',
      ),
    ),
  specificInstructions: z.string().optional().describe(accepted('not stored.')),
  templateName: z.string().optional().describe(accepted('not stored.')),
  icon: z.string().optional().describe(accepted('not stored.')),
  tags: z.array(z.string()).optional().describe(accepted('not stored.')),
  metadata: z.record(z.string(), JsonValue).optional().describe(accepted('not stored.')),
  requiredCredentialKeys: z.array(z.string()).optional().describe(accepted('not stored.')),
  documentationFiles: z.record(z.string(), JsonValue).optional().describe(accepted('not stored.')),
  tunnel: z
    .looseObject({ tunnelId: z.string() })
    .nullable()
    .optional()
    .describe(accepted('only null: kubeglue reaches private systems through gateway {tunnelId, target}.')),
};

const PLACEHOLDER = /^<<[^<>]+>>$/;

function checkCredentialShape(
  value: { authType?: AuthType | undefined; credentials?: Credentials | undefined },
  ctx: z.RefinementCtx,
): void {
  if (!value.authType || !value.credentials) return;
  // A placeholder sent back unchanged keeps the stored value, which is checked after merging.
  const placeholders = new Set(
    Object.keys(value.credentials).filter((k) => PLACEHOLDER.test(value.credentials?.[k] ?? '')),
  );
  const given = Object.fromEntries(Object.entries(value.credentials).filter(([k]) => !placeholders.has(k)));
  const result = CREDENTIAL_SHAPES[value.authType].safeParse(given);
  if (result.success) return;
  for (const issue of result.error.issues) {
    if (placeholders.has(String(issue.path[0]))) continue;
    // Never echo the credential value itself: name the field, and what a value must be (no message of
    // these shapes quotes the value).
    ctx.addIssue({
      code: 'custom',
      path: ['credentials', ...issue.path],
      message: issue.code === 'invalid_type' ? `required for authType ${value.authType}` : issue.message,
    });
  }
}

function refuseTunnel(value: { tunnel?: unknown }, ctx: z.RefinementCtx): void {
  if (value.tunnel === undefined || value.tunnel === null) return;
  ctx.addIssue({
    code: 'custom',
    path: ['tunnel'],
    message:
      'kubeglue reaches private systems through gateway: {tunnelId, target} (a target of the gateway agent)',
  });
}

type SuperglueSystemFields = { [K in keyof typeof superglueSystemFields]?: unknown } & {
  authentication?: { type: SuperglueAuthenticationType } | undefined;
  hasUserCredentials?: unknown;
};

/** kubeglue's model of a system body: superglue's fields dropped, its authentication.type as authType. */
function withoutSuperglueFields<
  T extends SuperglueSystemFields & {
    authType?: AuthType | undefined;
    credentials?: Credentials | undefined;
  },
>(body: T): Omit<T, keyof typeof superglueSystemFields | 'hasUserCredentials'> {
  const {
    authentication,
    specificInstructions: _si,
    templateName: _tn,
    icon: _i,
    tags: _t,
    metadata: _m,
    requiredCredentialKeys: _r,
    documentationFiles: _d,
    tunnel: _tu,
    hasUserCredentials: _h,
    ...rest
  } = body;
  if (rest.authType !== undefined || !authentication) return rest;
  const authType = authTypeFromSuperglue(authentication.type, Object.keys(rest.credentials ?? {}));
  return authType ? { ...rest, authType } : rest;
}

type SystemBodyFields = SuperglueSystemFields & {
  tunnel?: unknown;
  authType?: AuthType | undefined;
  credentials?: Credentials | undefined;
};

/**
 * How a system body (create or update) is read: a superglue tunnel refused, superglue's fields dropped
 * (its authentication.type becomes authType), then the credentials checked against the auth type.
 */
function systemBody<T extends SystemBodyFields, I>(body: z.ZodType<T, I>) {
  return body.superRefine(refuseTunnel).transform(withoutSuperglueFields).superRefine(checkCredentialShape);
}

/** Body of `POST /v1/systems`. */
export const SystemCreateBody = systemBody(
  z.strictObject({
    id: SystemId,
    ...systemFields,
    environment: Environment.default('prod'),
    credentials: Credentials.optional(),
    ...superglueSystemFields,
  }),
).meta({ id: 'SystemCreateBody' });
export type SystemCreateBody = z.infer<typeof SystemCreateBody>;

/**
 * Body of `PUT /v1/systems/{id}?environment=`: only given fields change. `credentials` replaces the stored
 * set, except that a value equal to its placeholder (`<<id_key>>`) keeps the stored value.
 */
export const SystemUpdateBody = systemBody(
  z.strictObject({
    id: SystemId.optional(),
    ...systemFields,
    environment: Environment.optional(),
    credentials: Credentials.optional(),
    createdAt: z.string().optional(),
    updatedAt: z.string().optional(),
    ...superglueSystemFields,
    // GET answers carry these; a fetched system can be sent back as is.
    hasUserCredentials: z.boolean().optional().describe('Set by the server; ignored.'),
  }),
).meta({ id: 'SystemUpdateBody' });
export type SystemUpdateBody = z.infer<typeof SystemUpdateBody>;

/** Progress of a system's documentation processing (the summary itself: GET /v1/systems/{id}/documentation). */
export const DocumentationState = z
  .object({
    status: z.enum(['pending', 'ready', 'failed']),
    source: z
      .string()
      .describe(
        'The URL fetched, `upload:<name>` for an uploaded file, or `postgres-schema` / `mysql-schema` (the database schema).',
      ),
    requestedAt: Instant,
    fetchedAt: Instant.optional().describe('When the kept summary was made.'),
    error: z.string().optional().describe('Why the last processing failed.'),
    processing: z
      .boolean()
      .describe('pending: an attempt is under way now (false: it waits for its first attempt or a retry).'),
    attempts: z
      .number()
      .int()
      .describe('Attempts made at the current request so far (the one under way included).'),
    maxAttempts: z
      .number()
      .int()
      .describe(
        'After this many failed or interrupted attempts in a row the request fails (KUBEGLUE_JOB_MAX_FAILURES).',
      ),
    retryAt: Instant.optional().describe(
      'pending after a failed attempt: when the next attempt is due (error says why it failed).',
    ),
  })
  .meta({ id: 'DocumentationState' });
export type DocumentationState = z.infer<typeof DocumentationState>;

/** Where a system's API key goes and why: its credentials, its documentation, or the default. */
export const ApiKeyPlacementDecision = z
  .object({
    in: z.enum(['header', 'query', 'cookie']),
    name: z.string().optional().describe('Absent when the credentials name it (their values are not shown).'),
    prefix: z.string().optional(),
    source: z.enum(['credentials', 'documentation', 'default']),
    detail: z.string().optional().describe('documentation: the document and security scheme that decided.'),
  })
  .meta({ id: 'ApiKeyPlacementDecision' });
export type ApiKeyPlacementDecision = z.infer<typeof ApiKeyPlacementDecision>;

/** What a system's rate budget did, counted in the store since its first request (every replica's). */
export const RateLimitUse = z
  .object({
    requests: z
      .number()
      .int()
      .describe(
        'Turns taken from the budget: one per request (each attempt counts), and one more for a turn given up because its sender could not use it on time.',
      ),
    waits: z.number().int().describe('Of those, the ones that had to wait for it.'),
    waitMs: z.number().int().describe('Their waits, in all.'),
    throttled: z
      .number()
      .int()
      .describe('Answers 429 or 503 with Retry-After from the system; each paused the whole budget.'),
    inFlight: z.number().int().describe('maxConcurrent: requests holding a slot now.'),
    backlogMs: z
      .number()
      .int()
      .describe('How long a request asking now would wait: how far ahead the budget is taken (0: free).'),
    pausedUntil: Instant.optional().describe(
      "Paused by the system's Retry-After until then: nothing is sent before it.",
    ),
    lastRequestAt: Instant.optional(),
  })
  .meta({ id: 'RateLimitUse' });
export type RateLimitUse = z.infer<typeof RateLimitUse>;

/** A system as the API returns it: credentials only as placeholders, never values. */
export const System = z
  .object({
    id: z.string(),
    ...systemFields,
    environment: Environment,
    credentials: z.record(z.string(), z.string()).describe('Placeholders <<systemId_key>>, never values.'),
    authentication: z
      .object({ type: SuperglueAuthenticationType })
      .describe(
        "authType in superglue's terms, for its clients (apiKey, bearer, botToken, customHeaders → api_key).",
      ),
    hasUserCredentials: z
      .boolean()
      .describe("Whether credentials are stored (superglue's clients show it as configured / missing)."),
    documentation: DocumentationState.optional().describe(
      'Progress of the documentation processing; absent when the system has no documentation.',
    ),
    apiKeyPlacement: ApiKeyPlacementDecision.optional().describe(
      'authType apiKey: where the key is sent, and what decided it.',
    ),
    oauth: z
      .object({
        status: z.enum(['none', 'not_authorized', 'active', 'expired', 'needs_reauthorization']),
        expiresAt: Instant.optional(),
        scopes: z.string().optional(),
      })
      .optional()
      .describe(
        'OAuth systems whose token kubeglue manages: token status, expiry and scopes; never a token.',
      ),
    rateLimitUse: RateLimitUse.optional().describe(
      'A system with a rateLimit, once its budget was used: what it let through and held back, across every replica.',
    ),
    createdAt: Instant.optional(),
    updatedAt: Instant.optional(),
  })
  .meta({ id: 'System' });
export type System = z.infer<typeof System>;

/** Single-system answers (create, get, update): superglue's envelope, which its clients read `data` of. */
export const SystemEnvelope = z
  .object({ success: z.literal(true), data: System })
  .meta({ id: 'SystemEnvelope' });

/** `GET /v1/systems/{id}/documentation`: the state and the kept summary (systems/documentation/parsers/summary.ts has its shape). */
export const SystemDocumentationEnvelope = z
  .object({
    success: z.literal(true),
    data: z.object({
      state: DocumentationState,
      summary: z
        .record(z.string(), JsonValue)
        .nullable()
        .describe(
          '{documents, skipped, truncated}: documents are OpenAPI summaries (servers, securitySchemes, ' +
            'operations), text documents (sections) or database schemas (tables, views); null until one is ready.',
        ),
    }),
  })
  .meta({ id: 'SystemDocumentationEnvelope' });

export const SystemDocumentationStateEnvelope = z
  .object({ success: z.literal(true), data: DocumentationState })
  .meta({ id: 'SystemDocumentationStateEnvelope' });

const [HTTP, ...CONNECTION_PROTOCOLS] = STEP_PROTOCOLS;
/** What a connection test speaks: a step protocol, or GraphQL (over HTTP, with its own harmless read). */
export const ConnectionTestProtocol = z.enum([HTTP, 'graphql', ...CONNECTION_PROTOCOLS]);
export type ConnectionTestProtocol = z.infer<typeof ConnectionTestProtocol>;

/**
 * `POST /v1/systems/{id}/test`: the outcome of one harmless read against the system variant, run as a
 * one-step run that is not recorded (docs/systems-and-credentials.md, "Testing the connection").
 */
export const ConnectionTestResult = z
  .object({
    systemId: z.string(),
    environment: Environment.describe('The variant tested.'),
    protocol: ConnectionTestProtocol,
    success: z
      .boolean()
      .describe(
        'true: the system answered the read with the stored credentials (for HTTP: any status below 500 ' +
          'other than 401 and 403).',
      ),
    tried: z
      .string()
      .describe('What was run, and where: "SELECT 1 on mysql://db.internal:3306/shop" (never a credential).'),
    durationMs: z.number().int().nonnegative().describe('How long the read took.'),
    error: z
      .string()
      .optional()
      .describe("The step's error when it failed, with credentials replaced by their placeholders."),
    detail: z
      .string()
      .optional()
      .describe('Why an answer that is not a success still counts as one (an HTTP 404 of the base URL).'),
    notes: z
      .array(z.string())
      .optional()
      .describe("The step's notes, e.g. credentials not sent to an endpoint outside the system's origins."),
    testedAt: Instant,
  })
  .meta({ id: 'ConnectionTestResult' });
export type ConnectionTestResult = z.infer<typeof ConnectionTestResult>;

/**
 * `GET /v1/credentials`: each system variant's stored credential keys, in the shape of superglue's
 * credential sets (its clients read them to show which keys a system has). Read-only, never values.
 */
export const CredentialSet = z
  .object({
    id: z.string().describe('<systemId>:<environment>'),
    name: z.string(),
    systemId: z.string(),
    environment: Environment,
    credentialKeys: z.array(z.object({ key: z.string(), hasValue: z.boolean() })),
    missingRequiredCredentialKeys: z.array(z.string()),
    isOwner: z.boolean(),
    isDefault: z.boolean().describe('The variant a request without ?environment= addresses.'),
    permission: z.literal('editor'),
    createdAt: Instant.optional(),
    updatedAt: Instant.optional(),
  })
  .meta({ id: 'CredentialSet' });

export const CredentialSetList = z
  .object({ success: z.literal(true), data: z.object({ items: z.array(CredentialSet) }) })
  .meta({ id: 'CredentialSetList' });

/** authType as superglue names it. */
export function superglueAuthenticationType(authType: AuthType | undefined): SuperglueAuthenticationType {
  switch (authType) {
    case 'apiKey':
    case 'bearer':
    case 'botToken':
    case 'customHeaders':
      return 'api_key';
    case 'basic':
      return 'basic_auth';
    case 'oauth':
      return 'oauth2';
    case 'dataStore':
      return 'connection_string';
    default:
      return 'none';
  }
}

/** The authType superglue's `authentication.type` means, given the credential keys sent with it. */
export function authTypeFromSuperglue(
  type: SuperglueAuthenticationType,
  credentialKeys: readonly string[],
): AuthType | undefined {
  switch (type) {
    case 'none':
      return 'none';
    case 'basic_auth':
      return 'basic';
    case 'oauth2':
      return 'oauth';
    case 'connection_string':
      return 'dataStore';
    case 'api_key':
      if (credentialKeys.includes('bearerToken')) return 'bearer';
      if (credentialKeys.includes('botToken')) return 'botToken';
      if (credentialKeys.includes('apiKey')) return 'apiKey';
      return undefined;
  }
}

export function credentialPlaceholder(systemId: string, key: string): string {
  return `<<${systemId}_${key}>>`;
}
