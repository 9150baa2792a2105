/**
 * The run form of a tool, generated from its inputSchema (schema-form.ts): a field per input with its
 * description, default and "required" mark; the schema's rules checked before anything is sent, each
 * problem at its field; the runtime credentials of the run body (never stored); a synchronous run shows
 * its outcome here, an asynchronous one opens its live run page. A refusal the server names by path
 * (`error.issues`) is shown at that field too. Runs carry requestSource frontend (api/client.ts).
 */
import { useId, useMemo, useState } from 'preact/hooks';
import { ApiFailure } from '../../api/client.ts';
import type { ErrorIssue, Run, RunRequest, Tool } from '../../api/types.ts';
import { Checkbox } from '../../components/checkbox.tsx';
import { ErrorMessage } from '../../components/error-message.tsx';
import { LabelledField } from '../../components/field.tsx';
import { formatDuration } from '../../components/format.ts';
import { pathText } from '../../components/json-search.ts';
import { JsonView } from '../../components/json-view.tsx';
import { StatusBadge } from '../../components/status.tsx';
import { runHref } from '../../hrefs.ts';
import { Link, navigate } from '../../router.tsx';
import { client } from '../../session.ts';
import {
  buildValue,
  countHint,
  type Draft,
  type Field,
  initialDraft,
  inputsForm,
  itemField,
  type Problem,
  pathKey,
  type Schema,
  splitWrappedSchema,
} from './schema-form.ts';

type Problems = ReadonlyMap<string, string>;

interface Credential {
  name: string;
  value: string;
}

/** The id of a field's control; any path gives a distinct id. */
function controlId(base: string, path: Field['path']): string {
  return `${base}-${encodeURIComponent(pathKey(path))}`;
}

/** Every path the form shows now (list items as many as there are), to place the server's issues. */
function shownPaths(root: Schema, field: Field, draft: Draft, into: Set<string>): Set<string> {
  into.add(pathKey(field.path));
  if (field.kind === 'group') {
    const drafts = (draft ?? {}) as Record<string, Draft>;
    for (const child of field.fields ?? []) {
      shownPaths(root, child, drafts[String(child.path[child.path.length - 1])], into);
    }
  } else if (field.kind === 'list' && Array.isArray(draft)) {
    draft.forEach((item, index) => {
      shownPaths(root, itemField(root, field, index), item, into);
    });
  }
  return into;
}

/**
 * The server's issues about the inputs, each at the nearest field the form shows (`inputs.a.b` at the field
 * of a.b, or of a when a is edited as JSON); what no field holds is returned to be listed above the form.
 */
function placeIssues(
  issues: readonly ErrorIssue[],
  shown: Set<string>,
  rootIsGroup: boolean,
): { atFields: Map<string, string>; elsewhere: string[] } {
  const atFields = new Map<string, string>();
  const elsewhere: string[] = [];
  for (const issue of issues) {
    if (issue.path[0] !== 'inputs') {
      elsewhere.push(`${pathText(issue.path)}: ${issue.message}`);
      continue;
    }
    let path = issue.path.slice(1);
    while (path.length > 0 && !shown.has(pathKey(path))) path = path.slice(0, -1);
    if (path.length === 0 && rootIsGroup) elsewhere.push(`${pathText(issue.path)}: ${issue.message}`);
    else atFields.set(pathKey(path), issue.message);
  }
  return { atFields, elsewhere };
}

function FieldError({ id, message }: { id: string; message: string | undefined }) {
  if (!message) return null;
  return (
    <p class="field-error" id={id}>
      <span aria-hidden="true">✕ </span>
      {message}
    </p>
  );
}

function Label({ field, htmlFor }: { field: Field; htmlFor?: string }) {
  return (
    <>
      {htmlFor ? <label for={htmlFor}>{field.label}</label> : field.label}
      {field.required && <span class="required-mark"> (required)</span>}
    </>
  );
}

const optionLabel = (option: unknown) => (typeof option === 'string' ? option : JSON.stringify(option));

const INPUT_TYPES: Record<string, 'date' | 'datetime-local' | 'email' | 'url' | 'password'> = {
  date: 'date',
  'date-time': 'datetime-local',
  email: 'email',
  uri: 'url',
  url: 'url',
  password: 'password',
};

interface ControlProps {
  root: Schema;
  field: Field;
  draft: Draft;
  set: (draft: Draft) => void;
  problems: Problems;
  base: string;
}

function FieldControl(props: ControlProps) {
  const { field, draft, set, problems, base } = props;
  const id = controlId(base, field.path);
  const error = problems.get(pathKey(field.path));
  const helpId = `${id}-help`;
  const errorId = `${id}-error`;
  const describedBy = [field.description ? helpId : '', error ? errorId : ''].filter(Boolean).join(' ');
  const common = {
    id,
    'aria-invalid': error ? ('true' as const) : undefined,
    'aria-describedby': describedBy || undefined,
    'aria-required': field.required || undefined,
  };
  const help = field.description ? (
    <p class="field-note" id={helpId}>
      {field.description}
    </p>
  ) : null;
  const text = (event: Event) => (event.currentTarget as HTMLInputElement).value;

  if (field.kind === 'group' || field.kind === 'list' || field.kind === 'choices') {
    return (
      <fieldset class="form-group" aria-describedby={describedBy || undefined}>
        <legend>
          <Label field={field} />
        </legend>
        {help}
        <FieldError id={errorId} message={error} />
        {field.kind === 'group' && <GroupFields {...props} />}
        {field.kind === 'list' && <ListItems {...props} />}
        {field.kind === 'choices' &&
          (field.options ?? []).map((option, index) => {
            const chosen = Array.isArray(draft) ? (draft as string[]) : [];
            const value = String(index);
            return (
              <Checkbox
                key={value}
                class="form-check"
                checked={chosen.includes(value)}
                change={(on) =>
                  set(
                    on
                      ? [...chosen, value].sort((a, b) => Number(a) - Number(b))
                      : chosen.filter((item) => item !== value),
                  )
                }
              >
                {optionLabel(option)}
              </Checkbox>
            );
          })}
      </fieldset>
    );
  }

  let control: preact.JSX.Element;
  switch (field.kind) {
    case 'boolean':
      return (
        <div class="field form-field">
          <span class="form-check">
            <input
              {...common}
              type="checkbox"
              checked={draft === true}
              onChange={(event) => set(event.currentTarget.checked)}
            />{' '}
            <Label field={field} htmlFor={id} />
          </span>
          {help}
          <FieldError id={errorId} message={error} />
        </div>
      );
    case 'choice':
      control = (
        <select
          {...common}
          value={typeof draft === 'string' ? draft : ''}
          onChange={(event) => set(text(event))}
        >
          <option value="">{field.required ? '— choose —' : '— not set —'}</option>
          {(field.options ?? []).map((option, index) => (
            <option key={String(index)} value={String(index)}>
              {optionLabel(option)}
            </option>
          ))}
        </select>
      );
      break;
    case 'number':
    case 'integer': {
      const { minimum, maximum } = field.schema;
      control = (
        <input
          {...common}
          type="number"
          inputMode={field.kind === 'integer' ? 'numeric' : 'decimal'}
          step={field.kind === 'integer' ? '1' : 'any'}
          min={typeof minimum === 'number' ? minimum : undefined}
          max={typeof maximum === 'number' ? maximum : undefined}
          value={typeof draft === 'string' ? draft : ''}
          onInput={(event) => set(text(event))}
        />
      );
      break;
    }
    case 'json':
      control = (
        <textarea
          {...common}
          class="code-input"
          rows={4}
          spellcheck={false}
          value={typeof draft === 'string' ? draft : ''}
          onInput={(event) => set(event.currentTarget.value)}
        />
      );
      break;
    default: {
      const format = typeof field.schema.format === 'string' ? field.schema.format : '';
      control = (
        <input
          {...common}
          // Preact types each input type's attributes apart; these types take the same ones as text.
          type={(INPUT_TYPES[format] ?? 'text') as 'text'}
          autocomplete="off"
          value={typeof draft === 'string' ? draft : ''}
          onInput={(event) => set(text(event))}
        />
      );
    }
  }
  return (
    <div class="field form-field">
      <span>
        <Label field={field} htmlFor={id} />
      </span>
      {help}
      {control}
      <FieldError id={errorId} message={error} />
    </div>
  );
}

function GroupFields({ root, field, draft, set, problems, base }: ControlProps) {
  const drafts = (draft ?? {}) as Record<string, Draft>;
  return (
    <>
      {(field.fields ?? []).map((child) => {
        const name = String(child.path[child.path.length - 1]);
        return (
          <FieldControl
            key={name}
            root={root}
            field={child}
            draft={drafts[name]}
            set={(value) => set({ ...drafts, [name]: value })}
            problems={problems}
            base={base}
          />
        );
      })}
    </>
  );
}

function ListItems({ root, field, draft, set, problems, base }: ControlProps) {
  const items = Array.isArray(draft) ? draft : [];
  return (
    <>
      <p class="muted">{countHint(field.schema, items.length)}</p>
      {items.length > 0 && (
        <ol class="form-list">
          {items.map((item, index) => {
            const child = itemField(root, field, index);
            return (
              <li key={index}>
                <FieldControl
                  root={root}
                  field={child}
                  draft={item}
                  set={(value) => set(items.map((old, i) => (i === index ? value : old)))}
                  problems={problems}
                  base={base}
                />
                <button
                  type="button"
                  class="secondary"
                  onClick={() => set(items.filter((_, i) => i !== index))}
                >
                  Remove {child.label}
                </button>
              </li>
            );
          })}
        </ol>
      )}
      <button
        type="button"
        class="secondary"
        onClick={() => set([...items, initialDraft(root, itemField(root, field, items.length))])}
      >
        Add {field.label} item
      </button>
    </>
  );
}

function Credentials({
  rows,
  set,
  problems,
}: {
  rows: Credential[];
  set: (rows: Credential[]) => void;
  problems: Problems;
}) {
  const base = useId();
  return (
    <fieldset class="form-group">
      <legend>Runtime credentials</legend>
      <p class="field-note">
        Sent with this run only, never stored in clear: each overrides the stored credential of its name,{' '}
        <code>systemId_key</code> (<code>crm_apiKey</code>), for this run.
      </p>
      {rows.length > 0 && (
        <ol class="form-list">
          {rows.map((row, index) => {
            const error = problems.get(pathKey(['credentials', index]));
            const update = (change: Partial<Credential>) =>
              set(rows.map((old, i) => (i === index ? { ...old, ...change } : old)));
            return (
              <li key={index} class="credential-row">
                <LabelledField id={`${base}-name-${index}`} label={<>Credential {index + 1} name</>}>
                  <input
                    id={`${base}-name-${index}`}
                    type="text"
                    autocomplete="off"
                    spellcheck={false}
                    value={row.name}
                    aria-invalid={error ? 'true' : undefined}
                    aria-describedby={error ? `${base}-error-${index}` : undefined}
                    onInput={(event) => update({ name: event.currentTarget.value })}
                  />
                </LabelledField>
                <LabelledField id={`${base}-value-${index}`} label={<>Credential {index + 1} value</>}>
                  <input
                    id={`${base}-value-${index}`}
                    type="password"
                    autocomplete="off"
                    value={row.value}
                    onInput={(event) => update({ value: event.currentTarget.value })}
                  />
                </LabelledField>
                <button
                  type="button"
                  class="secondary"
                  onClick={() => set(rows.filter((_, i) => i !== index))}
                >
                  Remove credential {index + 1}
                </button>
                <FieldError id={`${base}-error-${index}`} message={error} />
              </li>
            );
          })}
        </ol>
      )}
      <button type="button" class="secondary" onClick={() => set([...rows, { name: '', value: '' }])}>
        Add a credential
      </button>
    </fieldset>
  );
}

function SyncResult({ run }: { run: Run }) {
  return (
    <section class="run-result" aria-labelledby="run-result-title">
      <h3 id="run-result-title">
        Result: <StatusBadge status={run.status} />
      </h3>
      <p>
        <Link href={runHref(run.runId)}>Open run {run.runId}</Link>{' '}
        <span class="muted">{formatDuration(run.metadata.durationMs)}</span>
      </p>
      {run.error && (
        <div class="run-error" role="note" aria-label="Error of the run">
          <pre>{run.error}</pre>
        </div>
      )}
      {run.data !== undefined && run.data !== null && <JsonView value={run.data} label="Output" />}
    </section>
  );
}

export function RunForm({ tool, canRun }: { tool: Tool; canRun: boolean }) {
  const base = useId();
  const { root, form, credentialNames } = useMemo(() => {
    const { inputs, credentialNames } = splitWrappedSchema(tool.inputSchema as Schema | undefined);
    return { root: inputs ?? {}, form: inputsForm(inputs), credentialNames };
  }, [tool.inputSchema]);
  const [draft, setDraft] = useState<Draft>(() => initialDraft(root, form));
  const [credentials, setCredentials] = useState<Credential[]>(() =>
    credentialNames.map((name) => ({ name, value: '' })),
  );
  const [background, setBackground] = useState(false);
  const [mode, setMode] = useState<'prod' | 'dev'>('prod');
  const [record, setRecord] = useState(false);
  const [problems, setProblems] = useState<Problems>(new Map());
  const [elsewhere, setElsewhere] = useState<string[]>([]);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<Run>();

  const show = (found: Problems, other: string[]) => {
    setProblems(found);
    setElsewhere(other);
    const first = [...found.keys()][0];
    if (first !== undefined) {
      const path = JSON.parse(first) as Field['path'];
      // After the render that marks the fields.
      requestAnimationFrame(() => {
        const target =
          path[0] === 'credentials'
            ? document.getElementById(`${base}-credentials`)
            : document.getElementById(controlId(base, path));
        target?.focus();
      });
    }
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    setResult(undefined);
    const found: Problem[] = [];
    const inputs = buildValue(root, form, draft, found);
    if (form.kind === 'json' && inputs !== undefined && !isObject(inputs)) {
      found.push({ path: [], message: 'must be a JSON object' });
    }
    const given: Record<string, string> = {};
    credentials.forEach((row, index) => {
      if (!row.value && !row.name) return;
      if (!row.name.trim()) found.push({ path: ['credentials', index], message: 'needs a name' });
      else if (!row.value) found.push({ path: ['credentials', index], message: 'needs a value' });
      else given[row.name.trim()] = row.value;
    });
    const map = new Map(found.map((problem) => [pathKey(problem.path), problem.message]));
    if (map.size > 0) {
      show(map, []);
      return;
    }
    show(new Map(), []);
    const request: RunRequest = {
      ...(inputs !== undefined ? { inputs: inputs as RunRequest['inputs'] } : {}),
      ...(Object.keys(given).length > 0 ? { credentials: given } : {}),
      // Unticked sends nothing: the tool's own `record` default then applies.
      options: { async: background, ...(mode === 'dev' ? { mode } : {}), ...(record ? { record } : {}) },
    };
    setBusy(true);
    try {
      const run = await client().runTool(tool.id, request);
      if (background) navigate(runHref(run.runId));
      else setResult(run);
    } catch (caught) {
      setError(caught);
      if (caught instanceof ApiFailure && caught.issues.length > 0) {
        const placed = placeIssues(
          caught.issues,
          shownPaths(root, form, draft, new Set()),
          form.kind === 'group',
        );
        show(placed.atFields, placed.elsewhere);
      }
    } finally {
      setBusy(false);
    }
  };

  const count = problems.size;
  return (
    <form class="run-form" noValidate onSubmit={submit} aria-labelledby="run-form-title">
      <h2 id="run-form-title">Run this tool</h2>
      {!canRun && (
        <p class="muted">
          {tool.archived
            ? 'Archived tools cannot be run: unarchive it first.'
            : 'This API key cannot run tools (it lacks the runs:execute scope).'}
        </p>
      )}
      {count > 0 && (
        <div class="error-box" role="alert">
          <p class="error-title">
            {count === 1 ? '1 field needs' : `${count} fields need`} attention before the run can start
          </p>
        </div>
      )}
      {elsewhere.length > 0 && (
        <ul class="form-problems" aria-label="Other problems">
          {elsewhere.map((text) => (
            <li key={text}>{text}</li>
          ))}
        </ul>
      )}
      {form.kind === 'group' ? (
        (form.fields ?? []).length === 0 ? (
          <p class="muted">This tool takes no inputs.</p>
        ) : (
          <fieldset class="form-group form-inputs">
            <legend>Inputs</legend>
            <GroupFields
              root={root}
              field={form}
              draft={draft}
              set={setDraft}
              problems={problems}
              base={base}
            />
          </fieldset>
        )
      ) : (
        <FieldControl root={root} field={form} draft={draft} set={setDraft} problems={problems} base={base} />
      )}
      <details id={`${base}-credentials`} tabIndex={-1} open={credentials.length > 0}>
        <summary>Runtime credentials ({credentials.filter((row) => row.name).length})</summary>
        <Credentials rows={credentials} set={setCredentials} problems={problems} />
      </details>
      <fieldset class="form-group run-options">
        <legend>How to run</legend>
        <label class="form-check">
          <input
            type="radio"
            name={`${base}-how`}
            checked={!background}
            onChange={() => setBackground(false)}
          />{' '}
          Wait for the result here
        </label>
        <label class="form-check">
          <input
            type="radio"
            name={`${base}-how`}
            checked={background}
            onChange={() => setBackground(true)}
          />{' '}
          In the background, and follow it on its run page
        </label>
        <LabelledField id={`${base}-mode`} label="System credentials">
          <select
            id={`${base}-mode`}
            value={mode}
            onChange={(event) => setMode(event.currentTarget.value as 'prod' | 'dev')}
          >
            <option value="prod">prod (the default)</option>
            <option value="dev">dev (each system's dev variant, where it has one)</option>
          </select>
        </LabelledField>
        <Checkbox class="form-check" checked={record} change={setRecord}>
          Record responses (every exchange of the request steps, redacted, kept with the run)
        </Checkbox>
      </fieldset>
      <div class="actions">
        <button type="submit" disabled={busy || !canRun}>
          {busy ? 'Running…' : 'Run tool'}
        </button>
      </div>
      <ErrorMessage error={error} title="The run did not start" />
      {result && <SyncResult run={result} />}
    </form>
  );
}

function isObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
