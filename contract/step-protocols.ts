/**
 * The protocols a request step speaks, by the scheme of its URL: the one table the engine dispatches on,
 * tool validation checks against, origins take default ports from and the documentation lists. Adding a
 * protocol is a row here, its module in engine/protocols/ and its loader in engine/protocols/index.ts.
 */

/** What runs a step: HTTP(S), or a protocol that connects to a server and answers JSON. */
export const STEP_PROTOCOLS = ['http', 'postgres', 'mysql', 'redis', 'ftp', 'sftp', 'smb'] as const;
export type StepProtocol = (typeof STEP_PROTOCOLS)[number];
/** Every protocol but HTTP: each is a module of engine/protocols/ loaded on its first step. */
export type ConnectionProtocol = Exclude<StepProtocol, 'http'>;

export interface StepScheme {
  protocol: StepProtocol;
  /** The port a URL without one connects to. */
  defaultPort: number;
}

/** Every scheme a step URL may have (lower case, with the colon, as `URL#protocol` gives it). */
export const STEP_SCHEMES: Readonly<Record<string, StepScheme>> = {
  'http:': { protocol: 'http', defaultPort: 80 },
  'https:': { protocol: 'http', defaultPort: 443 },
  'postgres:': { protocol: 'postgres', defaultPort: 5432 },
  'postgresql:': { protocol: 'postgres', defaultPort: 5432 },
  'ftp:': { protocol: 'ftp', defaultPort: 21 },
  'ftps:': { protocol: 'ftp', defaultPort: 21 },
  'sftp:': { protocol: 'sftp', defaultPort: 22 },
  'redis:': { protocol: 'redis', defaultPort: 6379 },
  'rediss:': { protocol: 'redis', defaultPort: 6379 },
  'mysql:': { protocol: 'mysql', defaultPort: 3306 },
  'mariadb:': { protocol: 'mysql', defaultPort: 3306 },
  'smb:': { protocol: 'smb', defaultPort: 445 },
};

/**
 * Schemes the interface names for data-store systems that no step can use yet: no server of theirs runs
 * on the machines kubeglue is tested on, and an untested protocol is a defect. A tool with such a step is
 * refused when saved (KG_ERR_PROTOCOL_UNSUPPORTED); such systems can still be created.
 */
export const NOT_YET_SUPPORTED_SCHEMES: Readonly<Record<string, string>> = {
  'mssql:': 'MSSQL',
  'mongodb:': 'MongoDB',
  'mongodb+srv:': 'MongoDB',
};

/** The schemes a step URL may have, as a message lists them: `http, https, postgres, …`. */
export const SUPPORTED_SCHEMES_TEXT = Object.keys(STEP_SCHEMES)
  .map((scheme) => scheme.slice(0, -1))
  .join(', ');

/** The row of a scheme (`https:`, any case), or undefined for one no step speaks. */
export function stepScheme(scheme: string): StepScheme | undefined {
  return STEP_SCHEMES[scheme.toLowerCase()];
}

/** The scheme written literally at the start of a URL (lower case, with its colon), if any. */
export function literalScheme(url: string): string | undefined {
  return /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0].toLowerCase();
}

/**
 * The protocols a step URL speaks as far as can be seen without running it: its own scheme's, else (a
 * relative URL) those of its system's URLs (the variants of one system may differ). None for a URL that
 * starts with an expression: that is only known when rendered.
 */
export function protocolsSeen(url: string, systemUrls: readonly string[]): StepProtocol[] {
  const trimmed = url.trim();
  if (trimmed.startsWith('<<')) return [];
  const own = literalScheme(trimmed);
  const schemes = own !== undefined ? [own] : systemUrls.map((systemUrl) => literalScheme(systemUrl.trim()));
  return schemes.flatMap((scheme) => {
    const protocol = scheme === undefined ? undefined : stepScheme(scheme)?.protocol;
    return protocol ? [protocol] : [];
  });
}

/** Why a step with this scheme cannot run, naming the supported schemes; undefined when it can. */
export function schemeProblem(scheme: string): string | undefined {
  if (stepScheme(scheme)) return undefined;
  const name = NOT_YET_SUPPORTED_SCHEMES[scheme.toLowerCase()];
  if (name) {
    return `${name} (${scheme}//) is a data store no step can use yet; steps speak ${SUPPORTED_SCHEMES_TEXT}`;
  }
  return `unsupported URL scheme '${scheme}': steps speak ${SUPPORTED_SCHEMES_TEXT}`;
}
