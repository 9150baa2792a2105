/**
 * Creating a tool from its JSON definition (`/new/tool`, POST /v1/tools) and editing a tool's definition
 * (`/tools/:toolId/edit`, PUT /v1/tools/{id}), in the JSON editor: text that is not JSON is shown at the
 * line where it breaks before anything is sent; the server's refusals (400 by schema, 422 for code that
 * does not compile, unknown systems, bad templates) at the line of each field, and inside a transform at
 * the code's own line and column.
 */
import { useId, useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import { ApiFailure } from '../../api/client.ts';
import type { ErrorIssue, Tool, ToolCreateBody, ToolUpdateBody } from '../../api/types.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { JsonEditor, useEditorProblems } from '../../components/json-editor.tsx';
import { toolHref } from '../../hrefs.ts';
import { Link, navigate } from '../../router.tsx';
import { client } from '../../session.ts';
import { StepBuilder } from './builder.tsx';
import { DEFINITION_NOT_OBJECT, formatDefinition, parseDefinition } from './definition.ts';
import { definitionOf, ToolUnreadable, useTool } from './shared.tsx';

/** Optional fields a saved definition may have had; one deleted in the editor is sent as null (removed). */
const REMOVABLE = [
  'name',
  'version',
  'instruction',
  'inputSchema',
  'outputSchema',
  'outputTransform',
  'folder',
  'maxConcurrentRuns',
  'whenAtCapacity',
] as const;

const NEW_TOOL = {
  id: 'my-tool',
  name: 'My tool',
  instruction: 'What the tool does, for people',
  inputSchema: {
    type: 'object',
    properties: { query: { type: 'string', description: 'What to look for' } },
    required: ['query'],
  },
  steps: [
    {
      id: 'search',
      config: { url: 'https://api.example.com/search', method: 'GET', queryParams: { q: '<<query>>' } },
    },
  ],
  outputTransform: '(sourceData) => sourceData.search.data',
};

interface EditorPageProps {
  title: string;
  initial: string;
  submitLabel: string;
  cancelHref: string;
  /** Sends the definition; resolves to the saved tool. */
  save: (definition: Record<string, unknown>) => Promise<Tool>;
}

function ToolEditor({ title, initial, submitLabel, cancelHref, save }: EditorPageProps) {
  const id = useId();
  const [text, setText] = useState(initial);
  const { syntax, issues, setIssues, readObject } = useEditorProblems();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [view, setView] = useState<'builder' | 'json'>('builder');
  const [unbuildable, setUnbuildable] = useState<string>();
  const built = view === 'builder' ? parseDefinition(text) : undefined;

  const showBuilder = () => {
    // The builder shows the text as it is; text it cannot show stays in the JSON view, with the reason.
    const parsed = parseDefinition(text);
    setUnbuildable(parsed.ok ? undefined : parsed.message);
    if (parsed.ok) setView('builder');
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    setIssues([]);
    const definition = readObject(text, DEFINITION_NOT_OBJECT);
    if (!definition) {
      setView('json');
      document.getElementById(id)?.focus();
      return;
    }
    setBusy(true);
    try {
      const saved = await save(definition);
      navigate(toolHref(saved.id));
    } catch (caught) {
      setError(caught);
      if (caught instanceof ApiFailure) setIssues(caught.issues as readonly ErrorIssue[]);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="editor-title" class="tool-editor">
      <h1 id="editor-title">{title}</h1>
      <p class="muted">
        The definition as <code>POST /v1/tools</code> and <code>PUT /v1/tools/{'{id}'}</code> take it (
        <a href="/v1/openapi.json">the schema</a>). Problems are shown at their line; select one to move
        there.
      </p>
      <form onSubmit={submit} noValidate>
        <fieldset class="view-switch">
          <legend>View</legend>
          <label>
            <input type="radio" name="view" checked={view === 'builder'} onChange={showBuilder} /> Step
            builder
          </label>
          <label>
            <input type="radio" name="view" checked={view === 'json'} onChange={() => setView('json')} /> JSON
          </label>
        </fieldset>
        {unbuildable && view === 'json' && (
          <p class="field-error" role="alert">
            The builder cannot show this definition: {unbuildable}
          </p>
        )}
        {view === 'builder' && built?.ok ? (
          <StepBuilder
            definition={built.value}
            onChange={(definition) => setText(formatDefinition(definition))}
            issues={issues}
          />
        ) : (
          <JsonEditor
            id={id}
            label="Tool definition (JSON)"
            value={text}
            onInput={setText}
            issues={issues}
            syntax={syntax}
          />
        )}
        <ErrorMessage error={error} title="The tool was not saved" />
        <div class="actions">
          <button type="submit" disabled={busy}>
            {busy ? 'Saving…' : submitLabel}
          </button>
          <Link href={cancelHref}>Cancel</Link>
        </div>
      </form>
    </section>
  );
}

export function NewToolPage() {
  return (
    <ToolEditor
      title="New tool"
      initial={JSON.stringify(NEW_TOOL, null, 2)}
      submitLabel="Create tool"
      cancelHref="/tools"
      save={(definition) => client().call(routes.createTool, { body: definition as ToolCreateBody })}
    />
  );
}

export function EditToolPage({ params }: { params: Record<string, string> }) {
  const toolId = params.toolId ?? '';
  const { tool, error } = useTool(toolId);
  if (error) return <ToolUnreadable title={`Edit ${toolId}`} error={error} />;
  if (!tool) return <p role="status">Loading tool {toolId}…</p>;
  const save = (definition: Record<string, unknown>) => {
    const removed = REMOVABLE.filter((field) => tool[field] !== undefined && !(field in definition));
    const body = { ...definition, ...Object.fromEntries(removed.map((field) => [field, null])) };
    return client().call(routes.updateTool, { params: { toolId: tool.id }, body: body as ToolUpdateBody });
  };
  return (
    <ToolEditor
      title={`Edit ${tool.name ?? tool.id}`}
      initial={JSON.stringify(definitionOf(tool), null, 2)}
      submitLabel="Save tool"
      cancelHref={toolHref(tool.id)}
      save={save}
    />
  );
}
