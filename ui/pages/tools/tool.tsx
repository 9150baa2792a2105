/**
 * One tool: what it is (GET /v1/tools/{id}), a run form made from its inputSchema, its steps and schemas,
 * and its definition as JSON and as the Tool manifest kubectl applies (GET /v1/tools/{id}/manifest, YAML),
 * each ready to copy; its tests, run on the server (tests.tsx); archive or unarchive it, edit its JSON,
 * delete it after a confirmation.
 */
import { useEffect, useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import type { Tool, ToolStep } from '../../api/types.ts';
import { useAction } from '../../components/action.ts';
import { ConfirmButton } from '../../components/confirm.tsx';
import { CopyButton } from '../../components/copy-button.tsx';
import { ErrorMessage } from '../../components/error-message.tsx';
import { formatTime } from '../../components/format.ts';
import { toolHref } from '../../hrefs.ts';
import { Link, navigate, withQuery } from '../../router.tsx';
import { client, session } from '../../session.ts';
import { RunForm } from './run-form.tsx';
import { definitionOf, ToolState, ToolUnreadable, useTool } from './shared.tsx';
import { ToolTests } from './tests.tsx';

function StepSummary({ step, index }: { step: ToolStep; index: number }) {
  const config = step.config;
  return (
    <li class="step">
      <h3 class="step-head">
        <span class="muted">{index + 1}.</span> <span class="step-id">{step.id}</span>{' '}
        <span class="tag">{config.type === 'transform' ? 'transform' : 'request'}</span>
      </h3>
      {step.instruction && <p>{step.instruction}</p>}
      {config.type === 'transform' ? (
        <pre class="code-block">{config.transformCode}</pre>
      ) : (
        <p>
          <code>
            {config.method ?? 'GET'} {config.url}
          </code>
          {config.systemId && (
            <>
              {' '}
              on system <code>{config.systemId}</code>
            </>
          )}
          {config.pagination && config.pagination.type !== 'disabled' && (
            <span class="muted"> · paginated ({config.pagination.type})</span>
          )}
        </p>
      )}
      {step.dataSelector && (
        <details>
          <summary>Loops over (data selector)</summary>
          <pre class="code-block">{step.dataSelector}</pre>
        </details>
      )}
      {step.failureBehavior === 'continue' && <p class="muted">Continues when it fails.</p>}
    </li>
  );
}

function Schema({ title, schema }: { title: string; schema: unknown }) {
  return (
    <section aria-label={title}>
      <h3>{title}</h3>
      {schema ? <pre class="code-block">{JSON.stringify(schema, null, 2)}</pre> : <p class="muted">None.</p>}
    </section>
  );
}

function Definition({ tool }: { tool: Tool }) {
  const [manifest, setManifest] = useState<string>();
  const [error, setError] = useState<unknown>();
  const json = JSON.stringify(definitionOf(tool), null, 2);
  useEffect(() => {
    const abort = new AbortController();
    setManifest(undefined);
    client()
      .getToolManifestYaml(tool.id, abort.signal)
      .then(setManifest, (caught: unknown) => abort.signal.aborted || setError(caught));
    return () => abort.abort();
  }, [tool.id, tool.updatedAt]);
  return (
    <section aria-labelledby="definition-title">
      <h2 id="definition-title">Definition</h2>
      <div class="definition-grid">
        <section aria-labelledby="definition-json-title">
          <div class="page-head">
            <h3 id="definition-json-title">JSON</h3>
            <CopyButton text={json} label="Copy JSON" />
          </div>
          <p class="muted">
            As <code>POST /v1/tools</code> and <code>PUT /v1/tools/{'{id}'}</code> take it.
          </p>
          <pre class="code-block">{json}</pre>
        </section>
        <section aria-labelledby="definition-manifest-title">
          <div class="page-head">
            <h3 id="definition-manifest-title">Tool manifest</h3>
            {manifest !== undefined && <CopyButton text={manifest} label="Copy manifest" />}
          </div>
          <p class="muted">
            YAML for <code>kubectl apply -f</code> and GitOps (<code>GET /v1/tools/{'{id}'}/manifest</code>).
          </p>
          <ErrorMessage error={error} title="The manifest could not be read" />
          {manifest === undefined ? (
            !error && <p role="status">Loading the manifest…</p>
          ) : (
            <pre class="code-block">{manifest}</pre>
          )}
        </section>
      </div>
    </section>
  );
}

export function ToolPage({ params }: { params: Record<string, string> }) {
  const toolId = params.toolId ?? '';
  const { tool, setTool, error } = useTool(toolId);
  const { busy, error: actionError, run: act } = useAction();
  const scopes = session.value?.me.scopes ?? [];
  const canWrite = scopes.includes('tools:write');
  const canExecute = scopes.includes('runs:execute');

  if (error && !tool) return <ToolUnreadable title={`Tool ${toolId}`} error={error} />;
  if (!tool) return <p role="status">Loading tool {toolId}…</p>;

  const archive = () =>
    act(async () =>
      setTool(
        await client().call(routes.updateTool, {
          params: { toolId: tool.id },
          body: { archived: !tool.archived },
        }),
      ),
    );
  const remove = async () => {
    await client().call(routes.deleteTool, { params: { toolId: tool.id } });
    navigate('/tools');
  };

  const systems = [
    ...new Set(
      tool.steps.flatMap((step) =>
        step.config.type === 'request' && step.config.systemId ? [step.config.systemId] : [],
      ),
    ),
  ];
  return (
    <article aria-labelledby="tool-title" class="tool-page">
      <p class="breadcrumb">
        <Link href="/tools">Tools</Link>
        {tool.folder && (
          <>
            {' / '}
            <Link href={withQuery('/tools', { folder: tool.folder })}>{tool.folder}</Link>
          </>
        )}
      </p>
      <div class="page-head">
        <h1 id="tool-title">
          {tool.name ?? tool.id} <ToolState archived={tool.archived} />
        </h1>
        {canWrite && (
          <div class="actions">
            <Link href={`${toolHref(tool.id)}/edit`} class="button-link">
              Edit
            </Link>
            <button type="button" class="secondary" disabled={busy} onClick={archive}>
              {tool.archived ? 'Unarchive' : 'Archive'}
            </button>
            <ConfirmButton
              label="Delete"
              title={`Delete ${tool.name ?? tool.id}?`}
              confirmLabel="Delete tool"
              disabled={busy}
              onConfirm={remove}
            >
              <p>
                The tool <code>{tool.id}</code> is deleted for good, and its stored state with it. Its past
                runs stay in the run history; its schedules stay, paused, until a tool with this id exists
                again. To keep the tool but stop it from running, archive it instead.
              </p>
            </ConfirmButton>
          </div>
        )}
      </div>
      <ErrorMessage error={actionError} title="That did not work" />
      {tool.instruction && <p>{tool.instruction}</p>}
      <dl class="facts">
        <dt>Id</dt>
        <dd>
          <code>{tool.id}</code>
        </dd>
        <dt>Folder</dt>
        <dd>{tool.folder || '—'}</dd>
        <dt>Version</dt>
        <dd>{tool.version ?? '—'}</dd>
        <dt>Systems</dt>
        <dd>{systems.length > 0 ? systems.join(', ') : 'none'}</dd>
        <dt>Created</dt>
        <dd>{formatTime(tool.createdAt)}</dd>
        <dt>Updated</dt>
        <dd>{formatTime(tool.updatedAt)}</dd>
        <dt>Runs</dt>
        <dd>
          <Link href={withQuery('/runs', { toolId: tool.id })}>The runs of this tool</Link>
        </dd>
        <dt>Schedules</dt>
        <dd>
          <Link href={withQuery('/schedules', { toolId: tool.id })}>The schedules of this tool</Link>
        </dd>
        <dt>State</dt>
        <dd>
          <Link href={`${toolHref(tool.id)}/state`}>What its runs keep between them</Link>
        </dd>
      </dl>
      {!canWrite && (
        <p class="muted">This API key may read this tool but not change it (no tools:write scope).</p>
      )}

      <RunForm key={tool.updatedAt} tool={tool} canRun={canExecute && !tool.archived} />

      <section aria-labelledby="steps-title">
        <h2 id="steps-title">Steps</h2>
        <ol class="steps">
          {tool.steps.map((step, index) => (
            <StepSummary key={step.id} step={step} index={index} />
          ))}
        </ol>
        {tool.outputTransform && (
          <>
            <h3>Output transform</h3>
            <pre class="code-block">{tool.outputTransform}</pre>
          </>
        )}
      </section>

      <ToolTests key={tool.updatedAt} tool={tool} canRun={canExecute && !tool.archived} />

      <section aria-labelledby="schemas-title">
        <h2 id="schemas-title">Schemas</h2>
        <div class="definition-grid">
          <Schema title="Input schema" schema={tool.inputSchema} />
          <Schema title="Output schema" schema={tool.outputSchema} />
        </div>
      </section>

      <Definition tool={tool} />
    </article>
  );
}
