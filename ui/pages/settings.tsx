/** Settings: what the signed-in key may do (GET /v1/me), and the API keys (settings/api-keys.tsx). */
import { session } from '../session.ts';
import { ApiKeysSection } from './settings/api-keys.tsx';
import { CodeList, KeyLimit } from './settings/key-limit.tsx';

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
          <CodeList items={me.scopes} />
        </dd>
        <dt>Tools</dt>
        <dd>
          <KeyLimit ids={me.toolIds} everything="every tool" />
        </dd>
        <dt>Systems</dt>
        <dd>
          <KeyLimit ids={me.systemIds} everything="every system" />
        </dd>
      </dl>
      <h2>API keys</h2>
      <ApiKeysSection me={me} />
    </section>
  );
}
