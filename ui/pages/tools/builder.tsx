/**
 * The step builder: the tool definition's steps as cards in order, each with a form for its kind (a
 * request to a system by URL, or a transform), its loop and failure behaviour, and the tool's output
 * transform. It edits the same definition as the JSON view (definition.ts), field by field. "Try up to
 * here" on a card runs the draft up to and including that step (POST /v1/tools/run with untilStep) with
 * the page's sample inputs: each step's data shows under its card, the error on the failing one, and the
 * next step shows the sourceData it will receive. Nothing is saved.
 */
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import { ApiFailure } from '../../api/client.ts';
import type { ErrorIssue, Run, SystemList } from '../../api/types.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { LabelledField } from '../../components/field.tsx';
import { JsonView } from '../../components/json-view.tsx';
import { client } from '../../session.ts';
import type { CodeEditorHandle } from './code-editor.ts';
import {
  BODY_HINTS,
  configOf,
  isObject,
  isTransform,
  type JsonObject,
  type PlacedIssue,
  placeIssue,
  protocolOfUrl,
  stepsOf,
  withConfigField,
  withField,
  withNewStep,
  withoutStep,
  withStep,
  withStepMoved,
} from './definition.ts';

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'];
/** The tool's fields with a control of their own in the builder (their issues show there). */
const TOOL_FIELDS = ['id', 'name', 'instruction', 'outputTransform'];
/** The tool's own text fields, first in the builder, with their labels. */
const TOOL_TEXT_FIELDS = [
  ['id', 'Tool id'],
  ['name', 'Name'],
  ['instruction', 'Instruction'],
] as const;
const INPUTS_KEY = 'kubeglue.builder.inputs';

export interface BuilderProps {
  definition: JsonObject;
  onChange: (definition: JsonObject) => void;
  /** The API's issues of the last save, placed at their cards. */
  issues: readonly ErrorIssue[];
}

/** The last try: its answer (or refusal), which step it ran to. */
interface TryState {
  untilIndex: number;
  run?: Run;
  error?: unknown;
  issues: PlacedIssue[];
}

export function StepBuilder({ definition, onChange, issues }: BuilderProps) {
  const inputsId = useId();
  const [systems, setSystems] = useState<string[]>([]);
  const [inputs, setInputs] = useState(() => sessionStorage.getItem(INPUTS_KEY) ?? '{}');
  const [inputsError, setInputsError] = useState<string>();
  const [trying, setTrying] = useState<number>();
  const [tried, setTried] = useState<TryState>();

  useEffect(() => {
    const abort = new AbortController();
    client()
      .call(routes.listSystems, { query: { limit: 100 }, signal: abort.signal })
      .then(
        (list: SystemList) => setSystems([...new Set(list.data.map((system) => system.id))]),
        () => undefined,
      );
    return () => abort.abort();
  }, []);

  const steps = stepsOf(definition);
  const saved = issues.map(placeIssue);
  const placed = [...saved, ...(tried?.issues ?? [])];

  const tryUpTo = async (index: number) => {
    const step = steps[index];
    if (!step || typeof step.id !== 'string') return;
    let parsedInputs: unknown;
    try {
      parsedInputs = JSON.parse(inputs || '{}');
    } catch (caught) {
      setInputsError(`The sample inputs are not JSON: ${(caught as Error).message}`);
      return;
    }
    setInputsError(undefined);
    sessionStorage.setItem(INPUTS_KEY, inputs);
    setTrying(index);
    try {
      const run = await client().call(routes.runToolDefinition, {
        body: {
          tool: definition as never,
          inputs: parsedInputs as Record<string, never>,
          untilStep: step.id,
          options: { requestSource: 'frontend' },
        },
      });
      setTried({ untilIndex: index, run, issues: [] });
    } catch (caught) {
      const refused =
        caught instanceof ApiFailure ? (caught.issues as readonly ErrorIssue[]).map(placeIssue) : [];
      setTried({ untilIndex: index, error: caught, issues: refused });
    } finally {
      setTrying(undefined);
    }
  };

  const str = (value: unknown) => (typeof value === 'string' ? value : '');
  const toolField = (key: string) => (value: string) =>
    onChange(withField(definition, key, value || undefined));
  const toolIssues = (field: string) =>
    placed.filter((issue) => issue.step === undefined && issue.field === field);
  const runFailure =
    tried?.run?.status === 'failed' && !tried.run.stepResults?.some((entry) => !entry.success);

  return (
    <div class="step-builder">
      {TOOL_TEXT_FIELDS.map(([field, label]) => (
        <TextField
          key={field}
          label={label}
          value={str(definition[field])}
          onChange={toolField(field)}
          issues={toolIssues(field)}
        />
      ))}
      <LabelledField
        id={inputsId}
        label={'Sample inputs (JSON, for "Try up to here"; kept for this session)'}
      >
        <textarea
          id={inputsId}
          class="code-input"
          rows={3}
          spellcheck={false}
          value={inputs}
          onInput={(event) => setInputs(event.currentTarget.value)}
          aria-invalid={inputsError ? true : undefined}
        />
        {inputsError && <p class="field-error">{inputsError}</p>}
      </LabelledField>
      {placed
        .filter((issue) => issue.step === undefined && !TOOL_FIELDS.includes(issue.field))
        .map((issue) => (
          <p class="field-error" key={`${issue.field}:${issue.message}`}>
            {issue.field ? `${issue.field}: ` : ''}
            {issue.message}
          </p>
        ))}
      <ol class="step-cards" aria-label="Steps">
        {steps.map((step, index) => (
          <StepCard
            key={index}
            step={step}
            index={index}
            count={steps.length}
            systems={systems}
            issues={placed.filter((issue) => issue.step === index)}
            onChange={(next) => onChange(withStep(definition, index, () => next))}
            onConfig={(key, value) => onChange(withConfigField(definition, index, key, value))}
            onMove={(by) => onChange(withStepMoved(definition, index, by))}
            onRemove={() => onChange(withoutStep(definition, index))}
            onTry={() => tryUpTo(index)}
            trying={trying === index}
            tried={tried}
          />
        ))}
      </ol>
      <div class="actions">
        <button type="button" onClick={() => onChange(withNewStep(definition, 'request'))}>
          Add request step
        </button>
        <button type="button" onClick={() => onChange(withNewStep(definition, 'transform'))}>
          Add transform step
        </button>
      </div>
      <CodeField
        label="Output transform"
        hint="(sourceData) => value: the tool's output; empty: the last step's data."
        value={typeof definition.outputTransform === 'string' ? definition.outputTransform : ''}
        onChange={(value) => onChange(withField(definition, 'outputTransform', value || undefined))}
        issues={toolIssues('outputTransform')}
      />
      {runFailure && (
        <p class="field-error">The try failed: {tried?.run?.error ?? 'no step result says why'}</p>
      )}
    </div>
  );
}

interface CardProps {
  step: JsonObject;
  index: number;
  count: number;
  systems: readonly string[];
  issues: readonly PlacedIssue[];
  onChange: (step: JsonObject) => void;
  onConfig: (key: string, value: unknown) => void;
  onMove: (by: -1 | 1) => void;
  onRemove: () => void;
  onTry: () => void;
  trying: boolean;
  tried: TryState | undefined;
}

function StepCard(props: CardProps) {
  const { step, index, count, systems, issues, onChange, onConfig, onMove, onRemove, onTry, trying, tried } =
    props;
  const config = configOf(step);
  const transform = isTransform(step);
  const stepId = typeof step.id === 'string' ? step.id : '';
  const name = stepId || `step ${index + 1}`;
  const at = (field: string) => issues.filter((issue) => issue.field === field);
  const elsewhere = issues.filter(
    (issue) =>
      ![
        'id',
        'config.url',
        'config.transformCode',
        'dataSelector',
        'config.systemId',
        'config.body',
      ].includes(issue.field),
  );
  const result = tried?.run?.stepResults?.find((entry) => entry.stepId === stepId);
  const until = tried?.run?.until;
  const receives = until?.nextStepId !== undefined && until.nextStepId === stepId ? until : undefined;
  const failedHere = tried?.error !== undefined && tried.untilIndex === index && issues.length === 0;
  const str = (value: unknown) => (typeof value === 'string' ? value : '');

  return (
    <li class="step-card" aria-label={`Step ${index + 1}: ${name}`}>
      <header class="step-card-head">
        <h2>
          {index + 1}. {name} <span class="muted">({transform ? 'transform' : 'request'})</span>
        </h2>
        <div class="actions">
          <button
            type="button"
            onClick={() => onMove(-1)}
            disabled={index === 0}
            aria-label={`Move ${name} up`}
          >
            ↑ Up
          </button>
          <button
            type="button"
            onClick={() => onMove(1)}
            disabled={index === count - 1}
            aria-label={`Move ${name} down`}
          >
            ↓ Down
          </button>
          <button type="button" onClick={onRemove} aria-label={`Remove ${name}`}>
            Remove
          </button>
          <button type="button" onClick={onTry} disabled={trying} aria-label={`Try up to here: ${name}`}>
            {trying ? 'Trying…' : 'Try up to here'}
          </button>
        </div>
      </header>
      <TextField
        label="Step id"
        value={stepId}
        onChange={(value) => onChange(withField(step, 'id', value))}
        issues={at('id')}
      />
      {receives && (
        <section class="source-data" aria-label={`sourceData ${name} receives`}>
          <h3>sourceData this step receives</h3>
          <p>
            Keys: <code>{receives.sourceDataKeys.join(', ')}</code>
          </p>
          {receives.sourceData !== undefined && <JsonView value={receives.sourceData} label="sourceData" />}
        </section>
      )}
      {transform ? (
        <CodeField
          label="Transform code"
          hint="(sourceData) => value, in the sandbox: no network, no credentials."
          value={str(config.transformCode)}
          onChange={(value) => onConfig('transformCode', value)}
          issues={at('config.transformCode')}
        />
      ) : (
        <RequestFields config={config} systems={systems} onConfig={onConfig} at={at} />
      )}
      <details class="step-more">
        <summary>Loop and failure</summary>
        <CodeField
          label="Loop selector (dataSelector)"
          hint="(sourceData) => array: the step runs once per item as currentItem; empty: once."
          value={str(step.dataSelector)}
          onChange={(value) => onChange(withField(step, 'dataSelector', value || undefined))}
          issues={at('dataSelector')}
        />
        <TextField
          label="Loop concurrency"
          numeric
          value={step.loopConcurrency === undefined ? '' : String(step.loopConcurrency)}
          onChange={(value) =>
            onChange(withField(step, 'loopConcurrency', value === '' ? undefined : Number(value)))
          }
          issues={at('loopConcurrency')}
        />
        <SelectField
          label="When the step fails"
          value={str(step.failureBehavior)}
          options={[
            ['', '(default: fail)'],
            ['fail', 'fail: stop the run'],
            ['continue', 'continue: go on to the next step'],
          ]}
          onChange={(value) => onChange(withField(step, 'failureBehavior', value || undefined))}
        />
      </details>
      {elsewhere.map((issue) => (
        <p class="field-error" key={`${issue.field}:${issue.message}`}>
          {issue.field ? `${issue.field}: ` : ''}
          {issue.message}
        </p>
      ))}
      {failedHere && <ErrorMessage error={tried?.error} title="The try was refused" />}
      {result && (
        <section class="step-data" aria-label={`Data of ${name}`}>
          <h3>{result.success ? '✓ Data of this step' : '✗ This step failed'}</h3>
          {result.error && <p class="field-error">{result.error}</p>}
          {result.data !== undefined && <JsonView value={result.data} label={`${name} data`} />}
        </section>
      )}
    </li>
  );
}

function RequestFields({
  config,
  systems,
  onConfig,
  at,
}: {
  config: JsonObject;
  systems: readonly string[];
  onConfig: (key: string, value: unknown) => void;
  at: (field: string) => PlacedIssue[];
}) {
  const url = typeof config.url === 'string' ? config.url : '';
  const systemId = typeof config.systemId === 'string' ? config.systemId : '';
  const protocol = protocolOfUrl(url);
  const choices = systemId && !systems.includes(systemId) ? [...systems, systemId] : systems;
  return (
    <>
      <SelectField
        label="System"
        value={systemId}
        options={[['', '(none: the URL is absolute)'], ...choices.map((id): [string, string] => [id, id])]}
        onChange={(value) => onConfig('systemId', value || undefined)}
        issues={at('config.systemId')}
      />
      <TextField
        label="URL"
        value={url}
        onChange={(value) => onConfig('url', value)}
        issues={at('config.url')}
        hint={`Protocol: ${protocol === 'unknown' ? 'not one a step speaks' : protocol}. A path is relative to the system's URL.`}
      />
      <SelectField
        label="Method"
        value={typeof config.method === 'string' ? config.method : ''}
        options={[['', '(default: GET)'], ...METHODS.map((method): [string, string] => [method, method])]}
        onChange={(value) => onConfig('method', value || undefined)}
      />
      <JsonField
        label="Headers (JSON object)"
        value={config.headers}
        onChange={(value) => onConfig('headers', value)}
      />
      <JsonField
        label="Query parameters (JSON object)"
        value={config.queryParams}
        onChange={(value) => onConfig('queryParams', value)}
      />
      <JsonField
        label="Body (JSON, or a JSON string for text)"
        value={config.body}
        onChange={(value) => onConfig('body', value)}
        hint={BODY_HINTS[protocol]}
        issues={at('config.body')}
      />
      <JsonField
        label="Pagination (JSON object)"
        value={config.pagination}
        onChange={(value) => onConfig('pagination', value)}
        hint='{"type": "offsetBased" | "pageBased" | "cursorBased", "pageSize": 50, "stopCondition": "(response, pageInfo) => …"}: see docs/tools.md#pagination.'
      />
      {isObject(config.pagination) && (
        <CodeField
          label="Pagination stop condition"
          hint="(response, pageInfo, sourceData) => true stops; empty: the rules of docs/tools.md#pagination decide."
          value={typeof config.pagination.stopCondition === 'string' ? config.pagination.stopCondition : ''}
          onChange={(value) =>
            onConfig(
              'pagination',
              withField(config.pagination as JsonObject, 'stopCondition', value || undefined),
            )
          }
          issues={at('config.pagination.stopCondition')}
        />
      )}
    </>
  );
}

function Problems({ id, issues }: { id: string; issues: readonly PlacedIssue[] | undefined }) {
  if (!issues || issues.length === 0) return null;
  return (
    <ul id={id} class="field-error">
      {issues.map((issue) => (
        <li key={issue.message}>{issue.message}</li>
      ))}
    </ul>
  );
}

/** A field's hint (`<id>-hint`) and its problems (`<id>-problems`), below its control. */
function FieldNotes({
  id,
  hint,
  issues,
}: {
  id: string;
  hint?: string | undefined;
  issues?: readonly PlacedIssue[];
}) {
  return (
    <>
      {hint && (
        <p id={`${id}-hint`} class="muted">
          {hint}
        </p>
      )}
      <Problems id={`${id}-problems`} issues={issues} />
    </>
  );
}

/** What describes the control of field `id`: its problems when it has any, else its hint. */
function describedBy(id: string, bad: boolean, hint: string | undefined): string | undefined {
  return bad ? `${id}-problems` : hint ? `${id}-hint` : undefined;
}

interface FieldProps<T> {
  label: string;
  value: T;
  onChange: (value: T) => void;
  issues?: readonly PlacedIssue[];
  hint?: string;
}

function TextField({
  label,
  value,
  onChange,
  issues,
  hint,
  numeric = false,
}: FieldProps<string> & { numeric?: boolean }) {
  const id = useId();
  const bad = issues !== undefined && issues.length > 0;
  return (
    <LabelledField id={id} label={label}>
      <input
        id={id}
        type="text"
        inputMode={numeric ? 'numeric' : undefined}
        value={value}
        onInput={(event) => onChange(event.currentTarget.value)}
        aria-invalid={bad ? true : undefined}
        aria-describedby={describedBy(id, bad, hint)}
      />
      <FieldNotes id={id} hint={hint} issues={issues} />
    </LabelledField>
  );
}

function SelectField({
  label,
  value,
  options,
  onChange,
  issues,
}: FieldProps<string> & { options: readonly [string, string][] }) {
  const id = useId();
  return (
    <LabelledField id={id} label={label}>
      <select id={id} value={value} onChange={(event) => onChange(event.currentTarget.value)}>
        {options.map(([option, text]) => (
          <option key={option} value={option}>
            {text}
          </option>
        ))}
      </select>
      <Problems id={`${id}-problems`} issues={issues} />
    </LabelledField>
  );
}

type CodeEditorModule = typeof import('./code-editor.ts');
let codeEditorModule: Promise<CodeEditorModule> | undefined;

/**
 * JavaScript in a field: CodeMirror with highlighting (its own chunk, fetched the first time a code field
 * is shown), a monospaced text area until then or if the chunk cannot be fetched; the field's issues carry
 * the line and column inside the code.
 */
export function CodeField({ label, value, onChange, issues, hint }: FieldProps<string>) {
  const id = useId();
  const labelId = `${id}-label`;
  const bad = issues !== undefined && issues.length > 0;
  const described = describedBy(id, bad, hint);
  const description = bad ? issues.map((issue) => issue.message).join('; ') : hint;
  const host = useRef<HTMLDivElement>(null);
  const editor = useRef<CodeEditorHandle | undefined>(undefined);
  const emitted = useRef<string[]>([]);
  const latest = useRef(onChange);
  latest.current = onChange;
  const [mounted, setMounted] = useState(false);

  useEffect(() => {
    let gone = false;
    codeEditorModule ??= import('./code-editor.ts');
    codeEditorModule.then(
      (module) => {
        if (gone || !host.current) return;
        editor.current = module.createCodeEditor({
          parent: host.current,
          value,
          label,
          description,
          invalid: bad,
          onChange: (text) => {
            emitted.current.push(text);
            latest.current(text);
          },
        });
        setMounted(true);
      },
      () => {
        // The chunk could not be fetched: the text area stays, and works.
        codeEditorModule = undefined;
      },
    );
    return () => {
      gone = true;
      editor.current?.destroy();
      editor.current = undefined;
    };
  }, []);
  useEffect(() => {
    // A value the editor itself sent comes back a render later, maybe after more was typed: not a change.
    const sent = emitted.current.indexOf(value);
    if (sent >= 0) emitted.current.splice(0, sent + 1);
    else editor.current?.setValue(value);
  }, [value, mounted]);
  useEffect(() => editor.current?.setAttributes(description, bad), [description, bad, mounted]);

  return (
    <div class="field">
      <label id={labelId} for={mounted ? undefined : id}>
        {label}
      </label>
      <div ref={host} class="code-editor" />
      {!mounted && (
        <textarea
          id={id}
          class="code-input"
          rows={Math.min(12, Math.max(3, value.split('\n').length + 1))}
          spellcheck={false}
          value={value}
          onInput={(event) => onChange(event.currentTarget.value)}
          aria-invalid={bad ? true : undefined}
          aria-describedby={described}
        />
      )}
      <FieldNotes id={id} hint={hint} issues={issues} />
    </div>
  );
}

/**
 * A JSON value in a field: the text as typed is kept while it does not parse (shown as a problem); a
 * parsed value is written to the definition, empty text removes the field.
 */
function JsonField({ label, value, onChange, hint, issues }: FieldProps<unknown>) {
  const id = useId();
  const shown = value === undefined ? '' : JSON.stringify(value, null, 2);
  const [text, setText] = useState(shown);
  const [problem, setProblem] = useState<string>();
  useEffect(() => {
    // The definition changed elsewhere (the JSON view, a move): show it, unless it is what was typed.
    setText((typed) => {
      try {
        if (typed.trim() !== '' && JSON.stringify(JSON.parse(typed)) === JSON.stringify(value)) return typed;
      } catch {
        // typed text that does not parse yet stays while the definition holds no other value
        if (value === undefined) return typed;
      }
      return shown;
    });
  }, [shown]);
  const all = [...(issues ?? []), ...(problem ? [{ step: undefined, field: '', message: problem }] : [])];
  return (
    <LabelledField id={id} label={label}>
      <textarea
        id={id}
        class="code-input"
        rows={Math.min(8, Math.max(2, text.split('\n').length))}
        spellcheck={false}
        value={text}
        onInput={(event) => {
          const typed = event.currentTarget.value;
          setText(typed);
          if (typed.trim() === '') {
            setProblem(undefined);
            onChange(undefined);
            return;
          }
          try {
            const parsed = JSON.parse(typed) as unknown;
            setProblem(undefined);
            onChange(parsed);
          } catch (caught) {
            setProblem(`not JSON yet: ${(caught as Error).message}`);
          }
        }}
        aria-invalid={all.length > 0 ? true : undefined}
        aria-describedby={describedBy(id, all.length > 0, hint)}
      />
      <FieldNotes id={id} hint={hint} issues={all} />
    </LabelledField>
  );
}
