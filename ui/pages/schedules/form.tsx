/**
 * A new schedule (POST /v1/tools/{toolId}/schedules): the tool, a cron expression and a time zone, with
 * the next run times previewed as they are typed (GET /v1/schedules/next-runs: the server's own cron
 * evaluation, DST rules included, so no cron library comes to the browser), the inputs of every run, the
 * concurrency policy and whether it starts enabled.
 */
import { useEffect, useId, useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import type { ScheduleNextRuns, ToolSchedule, ToolScheduleCreateBody } from '../../api/types.ts';
import { Checkbox } from '../../components/checkbox.tsx';
import { ErrorMessage } from '../../components/error-message.tsx';
import { LabelledField } from '../../components/field.tsx';
import { formatInZone, formatTime } from '../../components/format.ts';
import { client } from '../../session.ts';

const PREVIEW_DELAY_MS = 300;
const PREVIEW_COUNT = '5';
const POLICIES = ['Allow', 'Forbid', 'Replace'] as const;
const POLICY_HELP: Record<(typeof POLICIES)[number], string> = {
  Allow: 'start another run beside one still running',
  Forbid: 'skip the tick while a run still runs',
  Replace: 'cancel the running run and start the new one',
};

/** The browser's own time zone, the form's first choice. */
function localZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

function zoneNames(): string[] {
  try {
    return Intl.supportedValuesOf('timeZone');
  } catch {
    return [];
  }
}

/** The next run times of what is typed, read from the server a moment after typing stops. */
function NextRuns({ cron, timeZone }: { cron: string; timeZone: string }) {
  const [preview, setPreview] = useState<ScheduleNextRuns>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    setPreview(undefined);
    setError(undefined);
    if (!cron.trim()) return;
    const abort = new AbortController();
    const timer = setTimeout(() => {
      client()
        .call(routes.previewScheduleRuns, {
          query: { cronExpression: cron, timezone: timeZone.trim() || 'UTC', count: PREVIEW_COUNT },
          signal: abort.signal,
        })
        .then(setPreview, (caught) => abort.signal.aborted || setError(caught));
    }, PREVIEW_DELAY_MS);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [cron, timeZone]);
  const local = localZone();
  return (
    <div class="next-runs" aria-live="polite">
      <h3>Next runs</h3>
      {!cron.trim() && <p class="muted">Type a cron expression to see when it runs.</p>}
      <ErrorMessage error={error} title="This schedule would not run" />
      {preview && preview.nextRuns.length === 0 && <p>It never runs.</p>}
      {preview && preview.nextRuns.length > 0 && (
        <ol aria-label="Next run times">
          {preview.nextRuns.map((tick) => (
            <li key={tick}>
              {formatInZone(tick, preview.timezone)}
              {preview.timezone !== local && <span class="muted"> ({formatTime(tick)} here)</span>}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

/** A required text field that suggests ids or names as the user types (a datalist of `suggestions`). */
function SuggestingField(props: {
  id: string;
  label: string;
  value: string;
  change(value: string): void;
  suggestions: readonly string[];
}) {
  const listId = useId();
  return (
    <LabelledField id={props.id} label={props.label}>
      <input
        id={props.id}
        type="text"
        required
        list={listId}
        autocomplete="off"
        spellcheck={false}
        value={props.value}
        onInput={(event) => props.change(event.currentTarget.value)}
      />
      <datalist id={listId}>
        {props.suggestions.map((suggestion) => (
          <option key={suggestion} value={suggestion} />
        ))}
      </datalist>
    </LabelledField>
  );
}

export function ScheduleForm(props: {
  toolId: string | undefined;
  toolIds: readonly string[];
  created(schedule: ToolSchedule): void;
  cancel(): void;
}) {
  const [toolId, setToolId] = useState(props.toolId ?? '');
  const [id, setId] = useState('');
  const [cron, setCron] = useState('');
  const [timeZone, setTimeZone] = useState(localZone);
  const [inputs, setInputs] = useState('');
  const [policy, setPolicy] = useState<(typeof POLICIES)[number]>('Allow');
  const [enabled, setEnabled] = useState(true);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [zones] = useState(zoneNames);

  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    let payload: Record<string, unknown> | undefined;
    if (inputs.trim()) {
      try {
        payload = JSON.parse(inputs) as Record<string, unknown>;
      } catch (caught) {
        setError(new Error(`The inputs are not JSON: ${(caught as Error).message}`));
        return;
      }
      if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
        setError(new Error('The inputs must be a JSON object, such as {"limit": 20}.'));
        return;
      }
    }
    const body: ToolScheduleCreateBody = {
      cronExpression: cron,
      timezone: timeZone.trim() || 'UTC',
      enabled,
      concurrencyPolicy: policy,
      ...(id.trim() ? { id: id.trim() } : {}),
      ...(payload ? { payload: payload as ToolScheduleCreateBody['payload'] } : {}),
    };
    setBusy(true);
    try {
      const schedule = await client().call(routes.createToolSchedule, {
        params: { toolId: toolId.trim() },
        body,
      });
      props.created(schedule);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="schedule-form" aria-labelledby="new-schedule-title" onSubmit={submit}>
      <h2 id="new-schedule-title">New schedule</h2>
      <div class="form-grid">
        <SuggestingField
          id="schedule-tool"
          label="Tool to run"
          value={toolId}
          change={setToolId}
          suggestions={props.toolIds}
        />
        <LabelledField id="schedule-cron" label="Cron expression">
          <input
            id="schedule-cron"
            type="text"
            required
            autocomplete="off"
            spellcheck={false}
            placeholder="0 9 * * MON-FRI"
            aria-describedby="schedule-cron-help"
            value={cron}
            onInput={(event) => setCron(event.currentTarget.value)}
          />
          <span id="schedule-cron-help" class="muted">
            minute hour day-of-month month day-of-week, or @hourly, @daily, @weekly, @monthly
          </span>
        </LabelledField>
        <SuggestingField
          id="schedule-zone"
          label="Time zone"
          value={timeZone}
          change={setTimeZone}
          suggestions={zones}
        />
        <LabelledField id="schedule-id" label="Id (optional)">
          <input
            id="schedule-id"
            type="text"
            autocomplete="off"
            spellcheck={false}
            placeholder="a new UUID"
            value={id}
            onInput={(event) => setId(event.currentTarget.value)}
          />
        </LabelledField>
        <LabelledField id="schedule-policy" label="While a run still runs">
          <select
            id="schedule-policy"
            value={policy}
            onChange={(event) => setPolicy(event.currentTarget.value as (typeof POLICIES)[number])}
          >
            {POLICIES.map((choice) => (
              <option key={choice} value={choice}>
                {choice}: {POLICY_HELP[choice]}
              </option>
            ))}
          </select>
        </LabelledField>
      </div>
      <LabelledField id="schedule-inputs" label="Inputs of every run (JSON object, optional)">
        <textarea
          id="schedule-inputs"
          rows={3}
          spellcheck={false}
          placeholder='{"limit": 20}'
          value={inputs}
          onInput={(event) => setInputs(event.currentTarget.value)}
        />
      </LabelledField>
      <Checkbox class="check" checked={enabled} change={setEnabled}>
        Enabled: ticks start runs from now on
      </Checkbox>
      <NextRuns cron={cron} timeZone={timeZone} />
      <ErrorMessage error={error} title="The schedule was not created" />
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Creating…' : 'Create schedule'}
        </button>
        <button type="button" class="secondary" onClick={props.cancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
