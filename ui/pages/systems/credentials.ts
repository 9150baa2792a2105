/**
 * The credential fields of each authentication method (a data-store login's depend on the protocol:
 * protocols.ts), and the editor that fills them. Credentials are
 * write-only here: the API answers only their key names, so a stored key shows as "stored", its field
 * stays empty, and leaving it empty sends the key's placeholder, which PATCH /v1/systems answers by
 * keeping the stored value (docs/systems-and-credentials.md). Typing replaces it. The server checks the
 * set against the method; these fields only lay it out.
 */
import type { AuthType } from '../../api/types.ts';
import { PROTOCOLS, type SystemProtocol } from './protocols.ts';

export interface CredentialField {
  key: string;
  label: string;
  /** A password field (the others are credentials too, and never shown after saving either). */
  secret?: boolean;
  required?: boolean;
  multiline?: boolean;
  choices?: readonly string[];
  hint?: string;
}

const METHOD_FIELDS: Record<Exclude<AuthType, 'dataStore'>, readonly CredentialField[]> = {
  none: [],
  apiKey: [
    { key: 'apiKey', label: 'API key', secret: true, required: true },
    { key: 'apiKeyHeader', label: 'Header name', hint: 'Send the key in this header, e.g. X-Api-Key.' },
    {
      key: 'apiKeyQueryParam',
      label: 'Query parameter name',
      hint: 'Or in this query parameter. Neither: where the documentation says, else Authorization: Bearer.',
    },
  ],
  bearer: [{ key: 'bearerToken', label: 'Bearer token', secret: true, required: true }],
  botToken: [{ key: 'botToken', label: 'Bot token', secret: true, required: true }],
  basic: [
    { key: 'username', label: 'Username', required: true },
    { key: 'password', label: 'Password', secret: true, required: true },
  ],
  // Each header is a credential of its own name: the rows of the "other credentials" editor.
  customHeaders: [],
  oauth: [
    {
      key: 'grantType',
      label: 'Grant',
      choices: ['client_credentials', 'authorization_code'],
      hint: 'authorization_code: a user connects the system in the browser (the Connect button).',
    },
    { key: 'clientId', label: 'Client id', required: true },
    { key: 'clientSecret', label: 'Client secret', secret: true, required: true },
    { key: 'tokenUrl', label: 'Token URL', required: true },
    { key: 'authorizationUrl', label: 'Authorization URL', hint: 'Needed for the authorization-code grant.' },
    { key: 'scopes', label: 'Scopes', hint: 'Space-separated.' },
    { key: 'audience', label: 'Audience', hint: 'Sent with client-credentials requests (Auth0 and alike).' },
    {
      key: 'tokenAuthMethod',
      label: 'Client authentication',
      choices: ['client_secret_basic', 'client_secret_post'],
      hint: "Default: what the provider's discovery document lists, else basic.",
    },
  ],
};

/** The fields of a method; a data-store login's are those of the system's protocol. */
export function fieldsFor(authType: AuthType, protocol: SystemProtocol): readonly CredentialField[] {
  return authType === 'dataStore' ? PROTOCOLS[protocol].login : METHOD_FIELDS[authType];
}

/** A credential outside the method's fields (or a custom header): its name and a new value. */
export interface ExtraCredential {
  /** Stable across edits, for keys and ids. */
  row: number;
  key: string;
  value: string;
  /** The key is stored: an empty value keeps it, and its name is fixed. */
  stored: boolean;
}

/** What the form holds of the credentials: typed values only; stored ones stay on the server. */
export interface CredentialDraft {
  values: Record<string, string>;
  /** Stored keys of the method's fields that the user chose to remove. */
  removed: readonly string[];
  extra: readonly ExtraCredential[];
}

/** As the API shows a stored credential (contract/api/system.ts credentialPlaceholder): kept when sent back. */
export function placeholder(systemId: string, key: string): string {
  return `<<${systemId}_${key}>>`;
}

/** A draft for a variant whose credentials, laid out in `fields`, have these stored keys. */
export function draftOf(fields: readonly CredentialField[], storedKeys: readonly string[]): CredentialDraft {
  const own = new Set(fields.map((field) => field.key));
  const extra = storedKeys
    .filter((key) => !own.has(key))
    .map((key, row) => ({ row, key, value: '', stored: true }));
  return { values: {}, removed: [], extra };
}

/**
 * The draft laid out in other fields (the protocol changed): typed values stay, a stored key that is no
 * field now gets a row by name (so it is kept), and a row whose key became a field goes into that field.
 */
export function relayout(
  draft: CredentialDraft,
  fields: readonly CredentialField[],
  storedKeys: readonly string[],
): CredentialDraft {
  const own = new Set(fields.map((field) => field.key));
  const kept = draft.extra.filter((row) => !own.has(row.key.trim()));
  const values = { ...draft.values };
  for (const row of draft.extra) if (own.has(row.key.trim()) && row.value) values[row.key.trim()] = row.value;
  let next = Math.max(-1, ...draft.extra.map((row) => row.row)) + 1;
  const added = storedKeys
    .filter((key) => !own.has(key) && !kept.some((row) => row.key === key))
    .map((key) => ({ row: next++, key, value: '', stored: true }));
  return { values, removed: draft.removed.filter((key) => own.has(key)), extra: [...kept, ...added] };
}

/**
 * The `credentials` of the request body: typed values, placeholders for stored keys left empty (kept), and
 * nothing for keys removed or not used by the method. Undefined when an edit leaves every stored key as it
 * is, so the stored set is not rewritten.
 */
export function credentialsToSend(
  systemId: string,
  fields: readonly CredentialField[],
  draft: CredentialDraft,
  storedKeys: readonly string[],
): Record<string, string> | undefined {
  const stored = new Set(storedKeys);
  const sent: Record<string, string> = {};
  let changed = false;
  for (const field of fields) {
    const value = draft.values[field.key] ?? '';
    if (value !== '') {
      sent[field.key] = value;
      changed = true;
    } else if (stored.has(field.key) && !draft.removed.includes(field.key)) {
      sent[field.key] = placeholder(systemId, field.key);
    }
  }
  for (const row of draft.extra) {
    const key = row.key.trim();
    if (!key) continue;
    if (row.value !== '') {
      sent[key] = row.value;
      changed = true;
    } else if (row.stored) {
      sent[key] = placeholder(systemId, key);
    }
  }
  const kept = Object.keys(sent).length;
  if (!changed && kept === stored.size) return undefined;
  return sent;
}
