/**
 * A tool's persistent state (`/tools/{toolId}/state`): what its runs keep between them in
 * `sourceData.persistedState` (GET /v1/tools/{toolId}/state), its version and when it was last written,
 * shown collapsed and searchable (JsonView), and a reset with a confirmation (DELETE, scope tools:write)
 * after which the next run starts from {}. The tool's page links here.
 */
import { useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import type { ToolStateReset } from '../../api/types.ts';
import { ConfirmButton } from '../../components/confirm.tsx';
import { ErrorMessage } from '../../components/error-message.tsx';
import { formatBytes, formatRelative, formatTime } from '../../components/format.ts';
import { JsonView } from '../../components/json-view.tsx';
import { usePolled } from '../../components/poll.ts';
import { toolHref } from '../../hrefs.ts';
import type { PageProps } from '../../pages.tsx';
import { Link, withQuery } from '../../router.tsx';
import { client, session } from '../../session.ts';

export function ToolStatePage({ params }: PageProps) {
  const toolId = params.toolId ?? '';
  const [reset, setReset] = useState<ToolStateReset>();
  const [reloads, setReloads] = useState(0);
  const mayReset = session.value?.me.scopes.includes('tools:write') ?? false;

  const { answer: state, error } = usePolled(
    (signal) => client().call(routes.getToolState, { params: { toolId }, signal }),
    undefined,
    [toolId, reloads],
  );

  const keys = state ? Object.keys(state.state).length : 0;
  return (
    <section aria-labelledby="state-title">
      <div class="page-head">
        <h1 id="state-title">State of {toolId}</h1>
        <p class="actions">
          <Link href={toolHref(toolId)}>The tool</Link>
          <Link href={withQuery('/runs', { toolId })}>Its runs</Link>
          <Link href={withQuery('/schedules', { toolId })}>Its schedules</Link>
        </p>
      </div>
      <p class="muted">
        What the tool's runs keep between them in <code>sourceData.persistedState</code>: a run reads it
        before its first step, and the keys its transforms change are saved when it succeeds.
      </p>
      <ErrorMessage error={error} title="The state could not be read" />
      {reset && (
        <p class="notice" role="status">
          Reset: {reset.deletedKeys} key{reset.deletedKeys === 1 ? '' : 's'} deleted; the state is now version{' '}
          {reset.version} and the next run starts from <code>{'{}'}</code>.
        </p>
      )}
      {state && (
        <>
          <dl class="facts" aria-label="The state">
            <dt>Version</dt>
            <dd>
              {state.version}
              <span class="muted"> (writes so far)</span>
            </dd>
            <dt>Updated</dt>
            <dd>
              {state.updatedAt ? (
                <>
                  {formatTime(state.updatedAt)} <span class="muted">({formatRelative(state.updatedAt)})</span>
                </>
              ) : (
                'never written'
              )}
            </dd>
            <dt>Keys</dt>
            <dd>
              {keys}{' '}
              <span class="muted">
                ({formatBytes(new TextEncoder().encode(JSON.stringify(state.state)).length)})
              </span>
            </dd>
          </dl>
          <h2>Keys and values</h2>
          {keys === 0 ? (
            <p>
              Empty: <code>{'{}'}</code>. The tool's next run starts from nothing.
            </p>
          ) : (
            <JsonView value={state.state} label="State" />
          )}
          <div class="actions">
            <ConfirmButton
              label="Reset state"
              title={`Reset the state of ${toolId}?`}
              confirmLabel="Reset state"
              disabled={!mayReset || keys === 0}
              onConfirm={async () => {
                setReset(await client().call(routes.deleteToolState, { params: { toolId } }));
                setReloads((count) => count + 1);
              }}
            >
              <p>
                Every key ({keys}) is deleted, and the next run of <code>{toolId}</code> starts from{' '}
                <code>{'{}'}</code> (an incremental sync starts over). A run in progress keeps only the keys
                it adds: its changes to these keys are discarded.
              </p>
            </ConfirmButton>
            {!mayReset && (
              <span class="muted">
                Resetting needs the scope <code>tools:write</code>.
              </span>
            )}
          </div>
        </>
      )}
    </section>
  );
}
