/**
 * Creating a system variant (/systems/new, ?id=&environment= to add the other variant of a system) and
 * editing one (/systems/:systemId/edit?environment=): where it is (its protocol and URL, or a connected
 * gateway and one of its targets), how it authenticates with a form per method (a data-store login's
 * fields are its protocol's: protocols.ts), its documentation URL, and a test of the saved connection.
 * Choosing a protocol or typing a URL's scheme shows that protocol's URL shape and credential fields.
 * Credentials are write-only (credentials.ts): after saving, only their key names are ever shown.
 */
import { useEffect, useState } from 'preact/hooks';
import type { AuthType, Environment, Gateway, System } from '../../api/types.ts';
import { Checkbox } from '../../components/checkbox.tsx';
import { ErrorMessage } from '../../components/error-message.tsx';
import { ChoiceField, LabelledField } from '../../components/field.tsx';
import { systemHref } from '../../hrefs.ts';
import type { PageProps } from '../../pages.tsx';
import { location, navigate } from '../../router.tsx';
import { session } from '../../session.ts';
import {
  canTestConnections,
  createSystem,
  ENVIRONMENTS,
  getVariant,
  listGateways,
  updateSystem,
} from './api.ts';
import { ConnectionTest, NotYetNotice } from './connection-test.tsx';
import {
  type CredentialDraft,
  type CredentialField,
  credentialsToSend,
  draftOf,
  type ExtraCredential,
  fieldsFor,
  relayout,
} from './credentials.ts';
import {
  notYetName,
  PROTOCOL_ORDER,
  PROTOCOLS,
  protocolOfSystem,
  protocolOfUrl,
  type SystemProtocol,
  withScheme,
} from './protocols.ts';
import { AUTH_LABELS, credentialKeys } from './status.tsx';

const AUTH_TYPES = Object.keys(AUTH_LABELS) as AuthType[];

interface Draft {
  id: string;
  environment: Environment;
  name: string;
  protocol: SystemProtocol;
  url: string;
  reach: 'direct' | 'gateway';
  tunnelId: string;
  target: string;
  authType: AuthType;
  credentials: CredentialDraft;
  documentationUrl: string;
  /** The rate budget's fields as typed (empty: not set). */
  requestsPerSecond: string;
  burst: string;
  maxConcurrent: string;
}

type RateLimitDraft = Pick<Draft, 'requestsPerSecond' | 'burst' | 'maxConcurrent'>;

/** The rateLimit the fields say ({} when all are empty: no budget). The server checks the values. */
function rateLimitOf(draft: RateLimitDraft): NonNullable<System['rateLimit']> {
  const number = (text: string) => (text.trim() === '' ? undefined : Number(text));
  const requestsPerSecond = number(draft.requestsPerSecond);
  const burst = number(draft.burst);
  const maxConcurrent = number(draft.maxConcurrent);
  return {
    ...(requestsPerSecond !== undefined ? { requestsPerSecond } : {}),
    ...(burst !== undefined ? { burst } : {}),
    ...(maxConcurrent !== undefined ? { maxConcurrent } : {}),
  };
}

const sameRateLimit = (a: System['rateLimit'], b: System['rateLimit']) =>
  JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});

function draftFrom(system: System | undefined, id: string, environment: Environment): Draft {
  const authType = system?.authType ?? 'none';
  const protocol = system ? protocolOfSystem(system) : 'http';
  return {
    id: system?.id ?? id,
    environment: system?.environment ?? environment,
    name: system?.name ?? '',
    protocol,
    url: system?.url ?? '',
    reach: system?.gateway ? 'gateway' : 'direct',
    tunnelId: system?.gateway?.tunnelId ?? '',
    target: system?.gateway?.target ?? '',
    authType,
    credentials: draftOf(fieldsFor(authType, protocol), system ? credentialKeys(system) : []),
    documentationUrl: system?.documentationUrl ?? '',
    requestsPerSecond: String(system?.rateLimit?.requestsPerSecond ?? ''),
    burst: String(system?.rateLimit?.burst ?? ''),
    maxConcurrent: String(system?.rateLimit?.maxConcurrent ?? ''),
  };
}

const environmentOf = (value: string | null): Environment => (value === 'dev' ? 'dev' : 'prod');

/** One credential field: empty, with "stored" said beside it when the key has a value on the server. */
function CredentialInput(props: {
  field: CredentialField;
  value: string;
  stored: boolean;
  removed: boolean;
  change(value: string): void;
  remove(removed: boolean): void;
}) {
  const { field, value, stored, removed, change, remove } = props;
  const id = `credential-${field.key}`;
  const note = `${id}-note`;
  const onInput = (event: Event) => change((event.currentTarget as HTMLInputElement).value);
  const described = stored || field.hint ? note : undefined;
  const common = {
    id,
    name: field.key,
    value,
    onInput,
    'aria-describedby': described,
    required: field.required === true && !stored,
    disabled: removed,
    autocomplete: field.secret ? 'new-password' : 'off',
    spellcheck: false,
  };
  return (
    <LabelledField id={id} label={field.label} class="credential-field">
      {field.choices ? (
        <select {...common} onChange={onInput}>
          <option value="">{stored ? 'keep the stored value' : 'default'}</option>
          {field.choices.map((choice) => (
            <option key={choice} value={choice}>
              {choice}
            </option>
          ))}
        </select>
      ) : field.multiline ? (
        <textarea {...common} rows={3} />
      ) : field.secret ? (
        <input {...common} type="password" />
      ) : (
        <input {...common} type="text" />
      )}
      {described && (
        <p id={note} class="field-note">
          {stored && <strong>Stored; leave empty to keep it, type to replace it. </strong>}
          {field.hint}
        </p>
      )}
      {stored && !field.required && (
        <Checkbox class="inline-check" checked={removed} change={remove}>
          Remove the stored {field.label.toLowerCase()}
        </Checkbox>
      )}
    </LabelledField>
  );
}

/** Credentials by name: a custom method's headers, or keys beside a method's fields. */
function ExtraCredentials(props: {
  title: string;
  rows: readonly ExtraCredential[];
  change(rows: ExtraCredential[]): void;
}) {
  const { title, rows, change } = props;
  const update = (row: number, patch: Partial<ExtraCredential>) =>
    change(rows.map((entry) => (entry.row === row ? { ...entry, ...patch } : entry)));
  const add = () =>
    change([
      ...rows,
      { row: Math.max(-1, ...rows.map((entry) => entry.row)) + 1, key: '', value: '', stored: false },
    ]);
  return (
    <fieldset class="extra-credentials">
      <legend>{title}</legend>
      {rows.length === 0 && title === 'Headers' && <p class="muted">None yet.</p>}
      {rows.map((entry, index) => {
        const label = entry.stored
          ? entry.key
          : `new ${title === 'Headers' ? 'header' : 'credential'} ${index + 1}`;
        return (
          <div key={entry.row} class="extra-row">
            {entry.stored ? (
              <p class="extra-name">
                <code>{entry.key}</code> <span class="muted">stored</span>
              </p>
            ) : (
              <TextField
                id={`extra-key-${entry.row}`}
                label={`Name of ${label}`}
                value={entry.key}
                change={(key) => update(entry.row, { key })}
              />
            )}
            <LabelledField id={`extra-value-${entry.row}`} label={<>Value of {label}</>}>
              <input
                id={`extra-value-${entry.row}`}
                type="password"
                autocomplete="new-password"
                placeholder={entry.stored ? 'leave empty to keep' : ''}
                value={entry.value}
                onInput={(event) => update(entry.row, { value: event.currentTarget.value })}
              />
            </LabelledField>
            <button
              type="button"
              class="secondary"
              onClick={() => change(rows.filter((other) => other.row !== entry.row))}
            >
              Remove {label}
            </button>
          </div>
        );
      })}
      <button type="button" class="secondary" onClick={add}>
        Add {title === 'Headers' ? 'a header' : 'a credential'}
      </button>
    </fieldset>
  );
}

function CredentialsEditor(props: {
  authType: AuthType;
  protocol: SystemProtocol;
  draft: CredentialDraft;
  storedKeys: readonly string[];
  change(draft: CredentialDraft): void;
}) {
  const { authType, protocol, draft, storedKeys, change } = props;
  const fields = fieldsFor(authType, protocol);
  if (authType === 'none' && draft.extra.length === 0) return null;
  const legend =
    authType === 'dataStore'
      ? `${AUTH_LABELS.dataStore} (${PROTOCOLS[protocol].label.replace(/ \(.*\)$/, '')})`
      : `${AUTH_LABELS[authType]} credentials`;
  return (
    <>
      {fields.length > 0 && (
        <fieldset class="credential-fields">
          <legend>{legend}</legend>
          {fields.map((field) => (
            <CredentialInput
              key={`${authType}-${protocol}-${field.key}`}
              field={field}
              value={draft.values[field.key] ?? ''}
              stored={storedKeys.includes(field.key)}
              removed={draft.removed.includes(field.key)}
              change={(value) => change({ ...draft, values: { ...draft.values, [field.key]: value } })}
              remove={(removed) =>
                change({
                  ...draft,
                  removed: removed
                    ? [...draft.removed, field.key]
                    : draft.removed.filter((key) => key !== field.key),
                })
              }
            />
          ))}
        </fieldset>
      )}
      <ExtraCredentials
        title={authType === 'customHeaders' ? 'Headers' : 'Other credentials'}
        rows={draft.extra}
        change={(extra) => change({ ...draft, extra })}
      />
    </>
  );
}

/** A connected gateway and one of its targets (GET /v1/gateways); the one stored stays choosable. */
function GatewayChoice(props: {
  tunnelId: string;
  target: string;
  change(tunnelId: string, target: string): void;
}) {
  const { tunnelId, target, change } = props;
  const [gateways, setGateways] = useState<Gateway[]>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    const abort = new AbortController();
    listGateways(abort.signal).then(
      (answer) => setGateways(answer.data.filter((gateway) => gateway.connected)),
      (caught) => abort.signal.aborted || setError(caught),
    );
    return () => abort.abort();
  }, []);
  const chosen = gateways?.find((gateway) => gateway.tunnelId === tunnelId);
  return (
    <div class="gateway-choice">
      <ErrorMessage error={error} title="The gateways could not be listed" />
      {gateways && gateways.length === 0 && !tunnelId && (
        <p class="muted">
          No gateway agent is connected. Start one in the private network (docs/gateway.md); it shows here
          once it is connected.
        </p>
      )}
      <ChoiceField
        id="system-gateway"
        label="Gateway"
        required
        value={tunnelId}
        none="choose a connected gateway"
        choices={(gateways ?? []).map((gateway) => ({
          value: gateway.tunnelId,
          text: `${gateway.tunnelId} (${gateway.targets.length} target${gateway.targets.length === 1 ? '' : 's'})`,
        }))}
        // Only once the connected gateways are known: until then the stored one is not "not connected".
        keep={gateways && ((stored) => `${stored} (not connected now)`)}
        change={(chosenId) => change(chosenId, '')}
      />
      <ChoiceField
        id="system-target"
        label="Target"
        required
        value={target}
        none="choose a target of the gateway"
        choices={(chosen?.targets ?? []).map((entry) => ({
          value: entry.name,
          text: `${entry.name} (${entry.protocol})`,
        }))}
        keep={(stored) => stored}
        change={(chosenTarget) => change(tunnelId, chosenTarget)}
      />
    </div>
  );
}

function TextField(props: {
  id: string;
  label: string;
  value: string;
  change(value: string): void;
  hint?: string;
  required?: boolean;
  pattern?: string;
  placeholder?: string;
}) {
  const { id, label, value, change, hint, required, pattern, placeholder } = props;
  return (
    <LabelledField id={id} label={label}>
      <input
        id={id}
        type="text"
        value={value}
        required={required}
        pattern={pattern}
        placeholder={placeholder}
        spellcheck={false}
        autocomplete="off"
        aria-describedby={hint ? `${id}-note` : undefined}
        onInput={(event) => change(event.currentTarget.value)}
      />
      {hint && (
        <p id={`${id}-note`} class="field-note">
          {hint}
        </p>
      )}
    </LabelledField>
  );
}

export function SystemFormPage({ params }: PageProps) {
  const editing = params.systemId;
  const query = location.value.query;
  const environment = environmentOf(query.get('environment'));
  const [stored, setStored] = useState<System>();
  const [draft, setDraft] = useState<Draft>(() => draftFrom(undefined, query.get('id') ?? '', environment));
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!editing) return;
    const abort = new AbortController();
    getVariant(editing, environment, abort.signal).then(
      (system) => {
        if (!system) {
          setError(new Error(`System ${editing} has no ${environment} variant.`));
          return;
        }
        setStored(system);
        setDraft(draftFrom(system, editing, environment));
      },
      (caught) => abort.signal.aborted || setError(caught),
    );
    return () => abort.abort();
  }, [editing, environment]);

  const set = (patch: Partial<Draft>) => setDraft({ ...draft, ...patch });
  const storedKeys = stored ? credentialKeys(stored) : [];
  const originalAuth = stored?.authType ?? 'none';
  const changingMethod = Boolean(stored) && draft.authType !== originalAuth && storedKeys.length > 0;
  const me = session.value?.me;
  const protocol = PROTOCOLS[draft.protocol];
  const notYet = notYetName(draft.protocol);

  /**
   * Another protocol: the URL takes its scheme, the login its fields; a new system's method follows
   * (a data-store login for a data store, none for an HTTP API) unless it already fits.
   */
  const changeProtocol = (next: SystemProtocol, url = withScheme(draft.url, next)) => {
    const dataStore = PROTOCOLS[next].dataStore;
    const authType =
      !stored && dataStore !== (draft.authType === 'dataStore')
        ? dataStore
          ? 'dataStore'
          : 'none'
        : draft.authType;
    const fields = fieldsFor(authType, next);
    const credentials =
      authType === draft.authType
        ? relayout(draft.credentials, fields, storedKeys)
        : { values: {}, removed: [], extra: draft.credentials.extra };
    set({ protocol: next, url, authType, credentials });
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    const credentials = credentialsToSend(
      draft.id,
      fieldsFor(draft.authType, draft.protocol),
      draft.credentials,
      storedKeys,
    );
    const gateway =
      draft.reach === 'gateway' ? { tunnelId: draft.tunnelId, target: draft.target } : undefined;
    try {
      if (stored) {
        await updateSystem(stored.id, stored.environment, {
          ...(draft.name !== (stored.name ?? '') ? { name: draft.name } : {}),
          ...(draft.url !== (stored.url ?? '') ? { url: draft.url } : {}),
          ...(draft.authType !== originalAuth ? { authType: draft.authType } : {}),
          ...(credentials ? { credentials } : {}),
          ...(gateway ? { gateway } : {}),
          ...(sameRateLimit(rateLimitOf(draft), stored.rateLimit) ? {} : { rateLimit: rateLimitOf(draft) }),
          // Given again unchanged, it would fetch the documentation again.
          ...(draft.documentationUrl !== (stored.documentationUrl ?? '')
            ? { documentationUrl: draft.documentationUrl }
            : {}),
        });
      } else {
        await createSystem({
          id: draft.id.trim(),
          environment: draft.environment,
          authType: draft.authType,
          ...(draft.name ? { name: draft.name } : {}),
          ...(draft.url ? { url: draft.url } : {}),
          ...(credentials ? { credentials } : {}),
          ...(gateway ? { gateway } : {}),
          ...(draft.documentationUrl ? { documentationUrl: draft.documentationUrl } : {}),
          ...(Object.keys(rateLimitOf(draft)).length > 0 ? { rateLimit: rateLimitOf(draft) } : {}),
        });
      }
      // The form (and every value typed into it) is gone with the navigation.
      navigate(systemHref(draft.id.trim()));
    } catch (caught) {
      setError(caught);
      setBusy(false);
    }
  };

  const title = editing ? `Edit system ${editing} (${environment})` : 'New system';
  if (editing && !stored) {
    return (
      <section aria-labelledby="system-form-title">
        <h1 id="system-form-title">{title}</h1>
        <ErrorMessage error={error} title="The system could not be read" />
        {!error && <p role="status">Loading…</p>}
      </section>
    );
  }
  return (
    <section aria-labelledby="system-form-title" class="system-form">
      <h1 id="system-form-title">{title}</h1>
      <form onSubmit={submit} aria-labelledby="system-form-title">
        {!editing && (
          <div class="form-row">
            <TextField
              id="system-id"
              label="Id"
              value={draft.id}
              required
              pattern="[A-Za-z_][A-Za-z0-9_\-]*"
              hint="What steps name in systemId and templates (<<id_key>>): a letter or _, then letters, digits, _ and -."
              change={(id) => set({ id })}
            />
            <LabelledField id="system-environment" label="Environment">
              <select
                id="system-environment"
                value={draft.environment}
                onChange={(event) => set({ environment: environmentOf(event.currentTarget.value) })}
              >
                {ENVIRONMENTS.map((env) => (
                  <option key={env} value={env}>
                    {env}
                  </option>
                ))}
              </select>
            </LabelledField>
          </div>
        )}
        <TextField id="system-name" label="Name" value={draft.name} change={(name) => set({ name })} />

        <fieldset>
          <legend>Where it is</legend>
          <label class="inline-check">
            <input
              type="radio"
              name="reach"
              checked={draft.reach === 'direct'}
              disabled={Boolean(stored?.gateway)}
              onChange={() => set({ reach: 'direct' })}
            />{' '}
            Reached directly
          </label>
          <label class="inline-check">
            <input
              type="radio"
              name="reach"
              checked={draft.reach === 'gateway'}
              onChange={() => set({ reach: 'gateway' })}
            />{' '}
            In a private network, through a gateway
          </label>
          {stored?.gateway && (
            <p class="field-note">A gateway cannot be taken off a system; its target can change.</p>
          )}
          {draft.reach === 'gateway' && (
            <GatewayChoice
              tunnelId={draft.tunnelId}
              target={draft.target}
              change={(tunnelId, target) => set({ tunnelId, target })}
            />
          )}
          <LabelledField id="system-protocol" label="Protocol">
            <select
              id="system-protocol"
              value={draft.protocol}
              onChange={(event) => changeProtocol(event.currentTarget.value as SystemProtocol)}
            >
              {PROTOCOL_ORDER.map((entry) => (
                <option key={entry} value={entry}>
                  {PROTOCOLS[entry].label}
                </option>
              ))}
            </select>
          </LabelledField>
          <TextField
            id="system-url"
            label="URL"
            value={draft.url}
            required={draft.reach === 'gateway'}
            placeholder={protocol.shape}
            hint={
              draft.reach === 'gateway'
                ? `Like ${protocol.shape}, with its real host name (e.g. http://billing.internal:8080): the Host header and the name TLS checks.`
                : `Like ${protocol.shape}. ${protocol.hint}`
            }
            change={(url) => {
              const named = protocolOfUrl(url, draft.protocol);
              if (named && named !== draft.protocol) changeProtocol(named, url);
              else set({ url });
            }}
          />
          {notYet && <NotYetNotice name={notYet} />}
        </fieldset>

        <fieldset>
          <legend>Authentication</legend>
          <LabelledField id="system-auth" label="Method">
            <select
              id="system-auth"
              value={draft.authType}
              onChange={(event) => {
                const authType = event.currentTarget.value as AuthType;
                // A method's own fields start empty; credentials by name stay in their rows.
                set({
                  authType,
                  credentials: {
                    values: {},
                    removed: [],
                    extra:
                      authType === originalAuth
                        ? draftOf(fieldsFor(authType, draft.protocol), storedKeys).extra
                        : draft.credentials.extra,
                  },
                });
              }}
            >
              {AUTH_TYPES.map((type) => (
                <option key={type} value={type}>
                  {AUTH_LABELS[type]}
                </option>
              ))}
            </select>
          </LabelledField>
          {changingMethod && (
            <p class="field-note">
              Changing the method replaces the stored credentials: keys of {AUTH_LABELS[originalAuth]} that
              this method does not use are removed when you save.
            </p>
          )}
          {editing && storedKeys.length > 0 && (
            <p class="field-note">
              Stored values are never shown. Leave a field empty to keep its value; type to replace it.
            </p>
          )}
          <CredentialsEditor
            authType={draft.authType}
            protocol={draft.protocol}
            draft={draft.credentials}
            storedKeys={storedKeys}
            change={(credentials) => set({ credentials })}
          />
        </fieldset>

        <fieldset>
          <legend>Documentation</legend>
          <TextField
            id="system-documentation-url"
            label="Documentation URL"
            value={draft.documentationUrl}
            hint="OpenAPI, a doc site, HTML, PDF, zip, Markdown: fetched and processed in the background. A file can be uploaded on the system's page."
            change={(documentationUrl) => set({ documentationUrl })}
          />
        </fieldset>

        <fieldset>
          <legend>Rate budget</legend>
          <p class="field-note">
            What every run's requests to this system share, across all replicas and runner Pods. Leave all
            three empty for no budget (docs/operations.md).
          </p>
          <TextField
            id="system-rate"
            label="Requests per second"
            value={draft.requestsPerSecond}
            pattern="[0-9]*\.?[0-9]*"
            hint="At most this many requests a second, on average (0.5: one every 2 s)."
            change={(requestsPerSecond) => set({ requestsPerSecond })}
          />
          <TextField
            id="system-burst"
            label="Burst"
            value={draft.burst}
            pattern="[0-9]*"
            hint="Requests that may go at once after a quiet spell (empty: 1, evenly spaced)."
            change={(burst) => set({ burst })}
          />
          <TextField
            id="system-max-concurrent"
            label="Requests in flight"
            value={draft.maxConcurrent}
            pattern="[0-9]*"
            hint="At most this many requests to the system at any moment (empty: no limit)."
            change={(maxConcurrent) => set({ maxConcurrent })}
          />
        </fieldset>

        {!notYet && me && canTestConnections(me) && (
          <fieldset>
            <legend>Connection</legend>
            {stored ? (
              <ConnectionTest
                systemId={stored.id}
                environment={stored.environment}
                label="Test the saved connection"
                note="Runs one harmless read with what is saved (a GET of the URL, SELECT 1, DBSIZE, a list): save your changes first to test them."
              />
            ) : (
              <p class="field-note">
                Once the system is created, its page tests the connection with one harmless read.
              </p>
            )}
          </fieldset>
        )}

        <ErrorMessage
          error={error}
          title={editing ? 'The system was not saved' : 'The system was not created'}
        />
        <div class="actions">
          <button type="submit" disabled={busy}>
            {busy ? 'Saving…' : editing ? 'Save changes' : 'Create system'}
          </button>
          <button
            type="button"
            class="secondary"
            onClick={() => navigate(editing ? systemHref(editing) : '/systems')}
          >
            Cancel
          </button>
        </div>
      </form>
    </section>
  );
}
