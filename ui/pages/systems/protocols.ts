/**
 * What the system form knows of each protocol a system may speak: the URL schemes that select it, the
 * shape of its URL, and the credentials a data-store login of it uses. The schemes mirror
 * contract/step-protocols.ts (the dashboard imports only types from contract/; test/unit/ui-system-
 * protocols.test.ts checks that every scheme there is here, with the same protocol). MSSQL and MongoDB
 * systems can be stored, but no step can use them yet: `notYet`.
 */
import type { StepProtocol } from '../../../contract/step-protocols.ts';
import type { CredentialField } from './credentials.ts';

/** A step protocol, GraphQL (over HTTP), or a data store no step speaks yet. */
export type SystemProtocol = StepProtocol | 'graphql' | 'mssql' | 'mongodb';

export interface ProtocolInfo {
  label: string;
  /** Lower case, with the colon; the first is what choosing the protocol writes into the URL. */
  schemes: readonly string[];
  /** The URL's shape, shown as the field's placeholder and in its note. */
  shape: string;
  hint: string;
  /** Logs in with a data-store login (authType dataStore) rather than an HTTP method. */
  dataStore: boolean;
  /** The fields of a data-store login. */
  login: readonly CredentialField[];
  /** A data store no step can use yet. */
  notYet?: true;
}

const username: CredentialField = { key: 'username', label: 'Username' };
const password: CredentialField = { key: 'password', label: 'Password', secret: true };
const connectionUrl = (example: string, forSteps = true): CredentialField => ({
  key: 'url',
  label: 'Connection URL',
  secret: true,
  hint:
    `Instead of the URL and login: the whole connection URL with its login, e.g. ${example}.` +
    (forSteps ? ' Steps then use <<id_url>> as their URL.' : ''),
});
const ca = (what: string): CredentialField => ({
  key: 'ca',
  label: 'CA certificate (PEM)',
  multiline: true,
  hint: `The CA that signed the server's certificate, for ${what}; without it the system's trusted CAs.`,
});

export const PROTOCOLS: Readonly<Record<SystemProtocol, ProtocolInfo>> = {
  http: {
    label: 'HTTP(S) API',
    schemes: ['https:', 'http:'],
    shape: 'https://api.example.com/v1',
    hint: 'The base URL steps resolve against; its origin receives the credentials.',
    dataStore: false,
    login: [username, password],
  },
  graphql: {
    label: 'GraphQL API',
    schemes: ['https:', 'http:'],
    shape: 'https://api.example.com/graphql',
    hint:
      'The GraphQL endpoint; its schema is introspected as the documentation. An endpoint whose path is not ' +
      '/graphql: give its URL with the hint #graphql as the documentation URL (https://api.example.com/query#graphql).',
    dataStore: false,
    login: [username, password],
  },
  postgres: {
    label: 'Postgres',
    schemes: ['postgres:', 'postgresql:'],
    shape: 'postgres://host:5432/db',
    hint: 'The database in the path; ?sslmode=require (or verify-full) for TLS. The login goes below, never in the URL.',
    dataStore: true,
    login: [username, password, connectionUrl('postgres://user:password@host:5432/db')],
  },
  mysql: {
    label: 'MySQL / MariaDB',
    schemes: ['mysql:', 'mariadb:'],
    shape: 'mysql://host:3306/db',
    hint: 'mysql:// or mariadb://, the database in the path; ?ssl-mode=REQUIRED (or VERIFY_IDENTITY) for TLS.',
    dataStore: true,
    login: [
      username,
      password,
      connectionUrl('mysql://user:password@host:3306/db'),
      ca('VERIFY_CA and VERIFY_IDENTITY'),
    ],
  },
  redis: {
    label: 'Redis',
    schemes: ['redis:', 'rediss:'],
    shape: 'redis://host:6379/0',
    hint: 'The database (0 to 15) in the path; rediss:// for TLS.',
    dataStore: true,
    login: [
      { ...username, hint: "An ACL user; empty: Redis's default user." },
      password,
      connectionUrl('redis://:password@host:6379/0'),
      ca('rediss://'),
    ],
  },
  ftp: {
    label: 'FTP / FTPS',
    schemes: ['ftp:', 'ftps:'],
    shape: 'ftp://host:21/path',
    hint: 'ftps:// for TLS (explicit; port 990 implicit). Relative paths of steps resolve under the path.',
    dataStore: true,
    login: [username, password, ca('FTPS')],
  },
  sftp: {
    label: 'SFTP',
    schemes: ['sftp:'],
    shape: 'sftp://host:22/path',
    hint: 'Relative paths of steps resolve under the path.',
    dataStore: true,
    login: [
      username,
      password,
      {
        key: 'privateKey',
        label: 'Private key',
        secret: true,
        multiline: true,
        hint: 'OpenSSH or PEM; instead of the password.',
      },
      { key: 'passphrase', label: 'Passphrase of the private key', secret: true },
      {
        key: 'hostFingerprint',
        label: 'Host key fingerprint',
        hint: 'SHA256:… as ssh-keygen -lf prints it; the server must present this key. Empty: any host key.',
      },
    ],
  },
  smb: {
    label: 'SMB file share',
    schemes: ['smb:'],
    shape: 'smb://host/share/path',
    hint: 'The first segment of the path is the share; port 445 unless given.',
    dataStore: true,
    login: [
      { ...username, hint: 'DOMAIN\\user names the domain too.' },
      password,
      { key: 'domain', label: 'Domain', hint: "The account's domain or workgroup; empty: the server's own." },
      connectionUrl('smb://DOMAIN;user:password@host/share'),
    ],
  },
  mssql: {
    label: 'MSSQL (no step can use it yet)',
    schemes: ['mssql:'],
    shape: 'mssql://host:1433/db',
    hint: 'Stored as given: no step connects to it yet.',
    dataStore: true,
    login: [username, password, connectionUrl('mssql://user:password@host:1433/db', false)],
    notYet: true,
  },
  mongodb: {
    label: 'MongoDB (no step can use it yet)',
    schemes: ['mongodb:', 'mongodb+srv:'],
    shape: 'mongodb://host:27017/db',
    hint: 'mongodb:// or mongodb+srv://, stored as given: no step connects to it yet.',
    dataStore: true,
    login: [username, password, connectionUrl('mongodb://user:password@host:27017/db', false)],
    notYet: true,
  },
};

export const PROTOCOL_ORDER = Object.keys(PROTOCOLS) as SystemProtocol[];

/** The display name of a protocol no step can use yet (`MSSQL`), for notices. */
export function notYetName(protocol: SystemProtocol): string | undefined {
  return PROTOCOLS[protocol].notYet ? PROTOCOLS[protocol].label.replace(/ \(.*\)$/, '') : undefined;
}

/** The scheme written at the start of a URL (lower case, with its colon), if any. */
export function schemeOf(url: string): string | undefined {
  return /^\s*([a-z][a-z0-9+.-]*:)/i.exec(url)?.[1]?.toLowerCase();
}

/** Whether an HTTP URL is a GraphQL endpoint by its path (`…/graphql`) or the `#graphql` hint. */
export function looksLikeGraphql(url: string | undefined): boolean {
  if (!url) return false;
  return /#graphql$/i.test(url.trim()) || /\/graphql\/?(?:[?#].*)?$/i.test(url.trim());
}

/**
 * The protocol a URL's scheme names; `current` decides between HTTP and GraphQL (both are http(s)),
 * unless the URL's path says GraphQL. Undefined for a URL without a scheme kubeglue knows.
 */
export function protocolOfUrl(url: string, current: SystemProtocol = 'http'): SystemProtocol | undefined {
  const scheme = schemeOf(url);
  if (!scheme) return undefined;
  const found = PROTOCOL_ORDER.find((protocol) => PROTOCOLS[protocol].schemes.includes(scheme));
  if (found === 'http' || found === 'graphql') {
    return current === 'graphql' || looksLikeGraphql(url) ? 'graphql' : 'http';
  }
  return found;
}

/** A stored system's protocol: its URL's, GraphQL when its URL or documentation URL is an endpoint. */
export function protocolOfSystem(system: {
  url?: string | undefined;
  documentationUrl?: string | undefined;
}): SystemProtocol {
  const byUrl = system.url ? protocolOfUrl(system.url) : undefined;
  if (byUrl === 'http' && looksLikeGraphql(system.documentationUrl)) return 'graphql';
  return byUrl ?? 'http';
}

/** The URL with its scheme replaced by the protocol's (a URL without a scheme is left as it is). */
export function withScheme(url: string, protocol: SystemProtocol): string {
  const scheme = schemeOf(url);
  const wanted = PROTOCOLS[protocol].schemes;
  if (!scheme || wanted.includes(scheme)) return url;
  return `${wanted[0]}${url.trim().slice(scheme.length)}`;
}
