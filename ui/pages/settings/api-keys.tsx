/**
 * Settings, API keys (scope keys:admin): the keys without their secrets (GET /v1/api-keys), a form that
 * creates one with its scopes (gateways:host lets it host gateway agents) and the tools and systems it is
 * limited to and its quotas (POST /v1/api-keys), the new key shown once with a copy button, and revoking with a
 * confirmation (DELETE /v1/api-keys/{id}). A key grants only what it has: scopes it lacks are not offered,
 * and the API's refusal is shown as it comes.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import type { ApiKey, ApiKeyCreateBody, ApiKeyCreated, Me, Scope } from '../../api/types.ts';
import { SCOPES } from '../../api/types.ts';
import { useAction } from '../../components/action.ts';
import { Checkbox } from '../../components/checkbox.tsx';
import { ConfirmButton } from '../../components/confirm.tsx';
import { CopyButton } from '../../components/copy-button.tsx';
import { ErrorMessage } from '../../components/error-message.tsx';
import { LabelledField } from '../../components/field.tsx';
import { formatRelative, formatTime } from '../../components/format.ts';
import { ShowMore, useShownRows } from '../../components/pager.tsx';
import { usePolled } from '../../components/poll.ts';
import { Table } from '../../components/table.tsx';
import { client, signOut } from '../../session.ts';
import { chosenIds, type IdChoice, IdPicker, NO_IDS } from './id-picker.tsx';
import { CodeList, KeyLimit } from './key-limit.tsx';

/** Where a new key starts: what a key limited to tools gets by default (contract/api/bodies.ts). */
const FIRST_SCOPES: readonly Scope[] = ['tools:read', 'runs:read', 'runs:execute'];
const ROWS_PER_PAGE = 100;
/** Suggestions for the tool and system fields: the first page the key sees is plenty to type from. */
const SUGGESTIONS = '100';

/** The new key, shown until the user says it is copied: never kept anywhere else. */
function NewKey({ created, done }: { created: ApiKeyCreated; done(): void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  const field = useRef<HTMLInputElement>(null);
  useEffect(() => heading.current?.focus(), []);
  return (
    <section class="new-key" aria-labelledby="new-key-title">
      <h3 id="new-key-title" ref={heading} tabIndex={-1}>
        New API key “{created.name}”
      </h3>
      <p>
        <strong>Copy it now: you will not see it again.</strong> kubeglue keeps only a hash of it; a lost key
        is revoked and replaced, never shown again.
      </p>
      <div class="inline-field">
        <label for="new-key-value">The new API key</label>
        <input
          id="new-key-value"
          ref={field}
          type="text"
          readOnly
          spellcheck={false}
          value={created.key}
          onFocus={(event) => event.currentTarget.select()}
        />
        <CopyButton text={created.key} label="Copy key" select={() => field.current} />
      </div>
      <button type="button" onClick={done}>
        I have copied it
      </button>
    </section>
  );
}

function useSuggestions(me: Me): { tools: string[]; systems: string[] } {
  const [found, setFound] = useState<{ tools: string[]; systems: string[] }>({ tools: [], systems: [] });
  useEffect(() => {
    const abort = new AbortController();
    const ids = async (list: typeof routes.listTools | typeof routes.listSystems, scope: Scope) => {
      // Without the scope there is nothing to suggest; a key limited to some ids can only grant those.
      if (!me.scopes.includes(scope)) return [];
      const answer = await client().call(list, { query: { limit: SUGGESTIONS }, signal: abort.signal });
      return answer.data.map((item) => item.id);
    };
    Promise.all([
      me.toolIds ?? ids(routes.listTools, 'tools:read').catch(() => []),
      me.systemIds ?? ids(routes.listSystems, 'systems:read').catch(() => []),
    ]).then(([tools, systems]) => abort.signal.aborted || setFound({ tools, systems }));
    return () => abort.abort();
  }, [me]);
  return found;
}

/** A quota of the new key: a whole number from 1, the text kept as typed (empty for none). */
function QuotaField(props: { id: string; label: string; value: string; change(value: string): void }) {
  return (
    <LabelledField id={props.id} label={props.label}>
      <input
        id={props.id}
        type="number"
        min={1}
        step={1}
        value={props.value}
        onInput={(event) => props.change(event.currentTarget.value)}
      />
    </LabelledField>
  );
}

function CreateKeyForm({ me, created }: { me: Me; created(key: ApiKeyCreated): void }) {
  const [name, setName] = useState('');
  const [admin, setAdmin] = useState(false);
  const [scopes, setScopes] = useState<readonly Scope[]>(FIRST_SCOPES.filter((s) => me.scopes.includes(s)));
  const [tools, setTools] = useState<IdChoice>(NO_IDS);
  const [systems, setSystems] = useState<IdChoice>(NO_IDS);
  const [perMinute, setPerMinute] = useState('');
  const [concurrent, setConcurrent] = useState('');
  const { busy, error, run } = useAction();
  const suggestions = useSuggestions(me);

  const toggle = (scope: Scope, on: boolean) =>
    setScopes(SCOPES.map((s) => s.scope).filter((s) => (s === scope ? on : scopes.includes(s))));
  const submit = async (event: Event) => {
    event.preventDefault();
    const toolIds = chosenIds(tools);
    const systemIds = chosenIds(systems);
    // Empty: no quota (docs/operations.md#quotas-per-api-key).
    const quotas = {
      ...(perMinute.trim() ? { runsPerMinute: Number(perMinute) } : {}),
      ...(concurrent.trim() ? { concurrentRuns: Number(concurrent) } : {}),
    };
    const limits = Object.keys(quotas).length > 0 ? { quotas } : {};
    const body: ApiKeyCreateBody = admin
      ? { name: name.trim(), admin: true, ...limits }
      : {
          name: name.trim(),
          scopes: [...scopes],
          ...(toolIds ? { toolIds } : {}),
          ...(systemIds ? { systemIds } : {}),
          ...limits,
        };
    await run(async () => {
      created(await client().call(routes.createApiKey, { body }));
      setName('');
      setTools(NO_IDS);
      setSystems(NO_IDS);
      setPerMinute('');
      setConcurrent('');
    });
  };

  return (
    <form class="key-form" aria-labelledby="create-key-title" onSubmit={submit}>
      <h3 id="create-key-title">Create an API key</h3>
      <LabelledField id="key-name" label="Name">
        <input
          id="key-name"
          type="text"
          required
          maxLength={128}
          value={name}
          onInput={(event) => setName(event.currentTarget.value)}
        />
      </LabelledField>
      {me.admin && (
        <Checkbox class="check" checked={admin} change={setAdmin}>
          Admin key: every scope, every tool and system
        </Checkbox>
      )}
      <fieldset class="scopes" disabled={admin}>
        <legend>Scopes: what the key may do</legend>
        {SCOPES.map(({ scope, what }) => {
          const held = me.scopes.includes(scope);
          return (
            <Checkbox
              key={scope}
              class="check"
              checked={scopes.includes(scope)}
              disabled={!held}
              change={(on) => toggle(scope, on)}
            >
              {scope === 'gateways:host' ? 'Host gateway agents' : what} (<code>{scope}</code>)
              {scope === 'gateways:host' && <span class="muted"> — {what}</span>}
              {!held && <span class="muted"> — your key lacks it, so it cannot grant it</span>}
            </Checkbox>
          );
        })}
      </fieldset>
      <IdPicker
        noun="tool"
        value={tools}
        change={setTools}
        suggestions={suggestions.tools}
        none={me.toolIds ? 'the tools your key is limited to' : 'every tool'}
        disabled={admin}
      />
      <IdPicker
        noun="system"
        value={systems}
        change={setSystems}
        suggestions={suggestions.systems}
        none={me.systemIds ? 'the systems your key is limited to' : 'every system'}
        disabled={admin}
      />
      <fieldset class="quotas">
        <legend>Quotas: empty for none</legend>
        <QuotaField
          id="key-runs-per-minute"
          label="Runs per minute"
          value={perMinute}
          change={setPerMinute}
        />
        <QuotaField
          id="key-concurrent-runs"
          label="Runs in progress at once"
          value={concurrent}
          change={setConcurrent}
        />
      </fieldset>
      <ErrorMessage error={error} title="The key was not created" />
      <div class="actions">
        <button type="submit" disabled={busy || (!admin && scopes.length === 0)}>
          {busy ? 'Creating…' : 'Create key'}
        </button>
        {!admin && scopes.length === 0 && <span class="muted">Choose at least one scope.</span>}
      </div>
    </form>
  );
}

function quotaText(quotas: ApiKey['quotas']): string {
  const parts = [
    ...(quotas.runsPerMinute !== null ? [`${quotas.runsPerMinute} runs/min`] : []),
    ...(quotas.concurrentRuns !== null ? [`${quotas.concurrentRuns} at once`] : []),
  ];
  return parts.length > 0 ? parts.join(', ') : 'none';
}

function KeyRow({ apiKey, me, revoked }: { apiKey: ApiKey; me: Me; revoked(): void }) {
  const self = apiKey.id === me.id;
  const revoke = async () => {
    await client().call(routes.revokeApiKey, { params: { keyId: apiKey.id } });
    // The signed-in key itself: nothing more can be done with it.
    if (self) signOut();
    else revoked();
  };
  return (
    <tr>
      <th scope="row">
        {apiKey.name}
        {self && <span class="muted"> (signed in with it)</span>}
      </th>
      <td>
        <code>{apiKey.id}</code>
      </td>
      <td>{apiKey.admin ? 'admin: every scope' : <CodeList items={apiKey.scopes} />}</td>
      <td>
        <KeyLimit ids={apiKey.toolIds} everything="every tool" />
      </td>
      <td>
        <KeyLimit ids={apiKey.systemIds} everything="every system" />
      </td>
      <td>{quotaText(apiKey.quotas)}</td>
      <td>{formatTime(apiKey.createdAt)}</td>
      <td>{apiKey.lastUsedAt ? formatRelative(apiKey.lastUsedAt) : 'never'}</td>
      <td>
        <ConfirmButton
          label="Revoke"
          ariaLabel={`Revoke key ${apiKey.name}`}
          title={`Revoke the key “${apiKey.name}”?`}
          confirmLabel="Revoke key"
          onConfirm={revoke}
        >
          <p>
            Every request with it is refused from now on, on every replica; a gateway agent using it cannot
            connect again. This cannot be undone.
          </p>
          {self && (
            <p>
              <strong>You are signed in with this key:</strong> you will be signed out.
            </p>
          )}
        </ConfirmButton>
      </td>
    </tr>
  );
}

export function ApiKeysSection({ me }: { me: Me }) {
  const [created, setCreated] = useState<ApiKeyCreated>();
  const [reloads, setReloads] = useState(0);
  const rows = useShownRows(ROWS_PER_PAGE);
  const allowed = me.scopes.includes('keys:admin');

  // Without keys:admin there is nothing to read: the section says so instead.
  const { answer: keys, error } = usePolled(
    async (signal) => (allowed ? client().call(routes.listApiKeys, { signal }) : undefined),
    undefined,
    [reloads, allowed],
  );

  if (!allowed) {
    return (
      <p>
        Managing API keys needs the scope <code>keys:admin</code>, which this key lacks.
      </p>
    );
  }
  const reload = () => setReloads(reloads + 1);
  return (
    <>
      {created && <NewKey created={created} done={() => setCreated(undefined)} />}
      <ErrorMessage error={error} title="The API keys could not be listed" />
      {keys && (
        <Table
          class="keys-table"
          caption="API keys (never their secrets)"
          captionHidden
          columns={[
            'Name',
            'Id',
            'Scopes',
            'Tools',
            'Systems',
            'Quotas',
            'Created',
            'Last used',
            { hidden: 'Revoke' },
          ]}
        >
          {keys.data.slice(0, rows.shown).map((apiKey) => (
            <KeyRow key={apiKey.id} apiKey={apiKey} me={me} revoked={reload} />
          ))}
        </Table>
      )}
      {keys && <ShowMore rows={rows} total={keys.data.length} what="keys" />}
      <CreateKeyForm
        me={me}
        created={(key) => {
          setCreated(key);
          reload();
        }}
      />
    </>
  );
}
