/** Settings: what the signed-in key may do (GET /v1/me). Managing API keys is not built yet. */
import { NotBuiltNote } from '../components/not-built.tsx';
import { session } from '../session.ts';

function Limit({ ids, everything }: { ids: readonly string[] | null; everything: string }) {
  if (ids === null) return <>{everything}</>;
  if (ids.length === 0) return <>none</>;
  return (
    <ul class="inline-list">
      {ids.map((id) => (
        <li key={id}>
          <code>{id}</code>
        </li>
      ))}
    </ul>
  );
}

export function SettingsPage() {
  const me = session.value?.me;
  if (!me) return null;
  return (
    <section aria-labelledby="settings-title">
      <h1 id="settings-title">Settings</h1>
      <h2>This API key</h2>
      <dl class="facts" aria-label="The signed-in API key">
        <dt>Name</dt>
        <dd>{me.name}</dd>
        <dt>Id</dt>
        <dd>
          <code>{me.id}</code>
        </dd>
        <dt>Role</dt>
        <dd>{me.admin ? 'admin (every scope, every tool and system)' : 'member'}</dd>
        <dt>Scopes</dt>
        <dd>
          <ul class="inline-list">
            {me.scopes.map((scope) => (
              <li key={scope}>
                <code>{scope}</code>
              </li>
            ))}
          </ul>
        </dd>
        <dt>Tools</dt>
        <dd>
          <Limit ids={me.toolIds} everything="every tool" />
        </dd>
        <dt>Systems</dt>
        <dd>
          <Limit ids={me.systemIds} everything="every system" />
        </dd>
      </dl>
      <h2>API keys</h2>
      <NotBuiltNote what="Creating, restricting and revoking API keys" api="/v1/api-keys" />
    </section>
  );
}
