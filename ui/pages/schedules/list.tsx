/**
 * Schedules: every schedule the key sees (GET /v1/schedules), or one tool's (`/schedules?toolId=…`: GET
 * /v1/tools/{toolId}/schedules), with its status and why (a paused one's message in full: its tool, its
 * payload or the key it runs as), its cron expression and time zone, its next run
 * and the latest tick it acted on; pause and resume (PUT enabled), delete with a confirmation, and a form
 * for a new one (form.tsx). The page reads the list again every few seconds, so ticks show as they happen.
 */
import { useEffect, useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import type { ToolSchedule } from '../../api/types.ts';
import { useAction } from '../../components/action.ts';
import { ConfirmButton } from '../../components/confirm.tsx';
import { ErrorMessage } from '../../components/error-message.tsx';
import { LabelledField } from '../../components/field.tsx';
import { formatInZone, formatRelative, formatTime } from '../../components/format.ts';
import { PageLinks, pageOf } from '../../components/pager.tsx';
import { usePolled } from '../../components/poll.ts';
import { Badge, type BadgeProps } from '../../components/status.tsx';
import { Table } from '../../components/table.tsx';
import { runHref, toolHref } from '../../hrefs.ts';
import { Link, location, navigate, withQuery } from '../../router.tsx';
import { client, session } from '../../session.ts';
import { ScheduleForm } from './form.tsx';

export const SCHEDULES_POLL_MS = 5_000;
const PAGE_SIZE = 50;

const STATES: Record<ToolSchedule['status'], BadgeProps> = {
  active: { icon: '▶', word: 'active', tone: 'success' },
  disabled: { icon: '⏸', word: 'disabled', tone: 'neutral' },
  paused: { icon: '⚠', word: 'paused', tone: 'aborted' },
  invalid: { icon: '✕', word: 'invalid', tone: 'failed' },
};

/** The path parameters of one schedule's routes. */
const scheduleParams = (schedule: ToolSchedule) => ({ toolId: schedule.toolId, scheduleId: schedule.id });

function NextRun({ schedule }: { schedule: ToolSchedule }) {
  if (!schedule.nextRunAt) return <span class="muted">never</span>;
  return (
    <>
      {formatInZone(schedule.nextRunAt, schedule.timezone)}
      <br />
      <span class="muted">
        {formatRelative(schedule.nextRunAt)}
        {schedule.status !== 'active' && ', if it were active'}
      </span>
    </>
  );
}

function LastTick({ schedule }: { schedule: ToolSchedule }) {
  const tick = schedule.lastTick;
  if (!tick) return <span class="muted">none yet</span>;
  return (
    <>
      {tick.outcome}
      {tick.reason && <span class="muted"> ({tick.reason})</span>} {formatRelative(tick.at)}
      <br />
      <span class="muted">{formatTime(tick.at)}</span>
      {tick.outcome === 'started' && schedule.lastRunId && (
        <>
          <br />
          <Link href={runHref(schedule.lastRunId)}>its run</Link>
        </>
      )}
    </>
  );
}

function ScheduleRow(props: { schedule: ToolSchedule; mayWrite: boolean; changed(): void }) {
  const { schedule, mayWrite, changed } = props;
  const { busy, error, run } = useAction();
  const setEnabled = (enabled: boolean) =>
    run(async () => {
      await client().call(routes.updateToolSchedule, { params: scheduleParams(schedule), body: { enabled } });
      changed();
    });
  const verb = schedule.enabled ? 'Pause' : 'Resume';
  return (
    <tr>
      <td>
        <Badge {...STATES[schedule.status]} />
        {schedule.status !== 'active' && (
          <>
            <br />
            <span class="muted" title={schedule.statusMessage}>
              {schedule.statusReason}
            </span>
          </>
        )}
        {/* Paused or invalid: what holds it back and what to do is not obvious from the reason alone. */}
        {(schedule.status === 'paused' || schedule.status === 'invalid') && (
          <>
            <br />
            <small>{schedule.statusMessage}</small>
          </>
        )}
      </td>
      <th scope="row">
        <code>{schedule.id}</code>
        <br />
        <code>{schedule.cronExpression}</code> <span class="muted">{schedule.timezone}</span>
      </th>
      <td>
        <Link href={withQuery('/schedules', { toolId: schedule.toolId })}>{schedule.toolId}</Link>
      </td>
      <td>
        <NextRun schedule={schedule} />
      </td>
      <td>
        <LastTick schedule={schedule} />
      </td>
      <td>
        <div class="actions">
          <button
            type="button"
            class="secondary"
            disabled={!mayWrite || busy}
            aria-label={`${verb} schedule ${schedule.id}`}
            onClick={() => setEnabled(!schedule.enabled)}
          >
            {verb}
          </button>
          <ConfirmButton
            label="Delete"
            ariaLabel={`Delete schedule ${schedule.id}`}
            title={`Delete the schedule ${schedule.id}?`}
            confirmLabel="Delete schedule"
            disabled={!mayWrite}
            onConfirm={async () => {
              await client().call(routes.deleteToolSchedule, { params: scheduleParams(schedule) });
              changed();
            }}
          >
            <p>
              Its ticks stop starting runs of <code>{schedule.toolId}</code>. Runs it started already go on.
            </p>
          </ConfirmButton>
        </div>
        <ErrorMessage
          error={error}
          title={`The schedule could not be ${schedule.enabled ? 'paused' : 'resumed'}`}
        />
      </td>
    </tr>
  );
}

function ToolFilter({ toolId }: { toolId: string | undefined }) {
  return (
    <form class="filters" aria-label="Filter schedules" onSubmit={(event) => event.preventDefault()}>
      <LabelledField id="schedules-tool" label="Tool">
        <input
          id="schedules-tool"
          type="text"
          placeholder="any tool"
          value={toolId ?? ''}
          onChange={(event) =>
            navigate(withQuery('/schedules', { toolId: event.currentTarget.value.trim() }), { replace: true })
          }
        />
      </LabelledField>
      {toolId && (
        <button type="button" class="secondary" onClick={() => navigate('/schedules', { replace: true })}>
          Every tool
        </button>
      )}
    </form>
  );
}

function useToolIds(): string[] {
  const [ids, setIds] = useState<string[]>([]);
  useEffect(() => {
    const abort = new AbortController();
    client()
      .call(routes.listTools, { query: { limit: 100 }, signal: abort.signal })
      .then((list) => setIds(list.data.map((tool) => tool.id)))
      .catch(() => {
        // Only suggestions: the tool field takes any id.
      });
    return () => abort.abort();
  }, []);
  return ids;
}

export function SchedulesPage() {
  const query = location.value.query;
  const toolId = query.get('toolId') || undefined;
  const page = pageOf(query);
  const [reloads, setReloads] = useState(0);
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<ToolSchedule>();
  const toolIds = useToolIds();
  const scopes = session.value?.me.scopes ?? [];
  const mayWrite = scopes.includes('tools:write') && scopes.includes('runs:execute');

  const { answer: list, error } = usePolled(
    (signal) => {
      const query = { page, limit: PAGE_SIZE };
      return toolId
        ? client().call(routes.listToolSchedules, { params: { toolId }, query, signal })
        : client().call(routes.listSchedules, { query, signal });
    },
    SCHEDULES_POLL_MS,
    [toolId, page, reloads],
  );
  const reload = () => setReloads((count) => count + 1);

  return (
    <section aria-labelledby="schedules-title">
      <div class="page-head">
        <h1 id="schedules-title">{toolId ? `Schedules of ${toolId}` : 'Schedules'}</h1>
        <button
          type="button"
          aria-expanded={creating}
          disabled={!mayWrite}
          onClick={() => {
            setCreating(!creating);
            setCreated(undefined);
          }}
        >
          New schedule
        </button>
      </div>
      {!mayWrite && (
        <p class="muted">
          Creating and changing schedules needs the scopes <code>tools:write</code> and{' '}
          <code>runs:execute</code>.
        </p>
      )}
      {toolId && (
        <p class="actions">
          <Link href={withQuery('/runs', { toolId })}>Runs of {toolId}</Link>
          <Link href={`${toolHref(toolId)}/state`}>State of {toolId}</Link>
        </p>
      )}
      {creating && (
        <ScheduleForm
          toolId={toolId}
          toolIds={toolIds}
          cancel={() => setCreating(false)}
          created={(schedule) => {
            setCreating(false);
            setCreated(schedule);
            reload();
          }}
        />
      )}
      {created && (
        <p class="notice" role="status">
          Schedule <code>{created.id}</code> created for <code>{created.toolId}</code>; next run{' '}
          {created.nextRunAt ? formatInZone(created.nextRunAt, created.timezone) : 'never'}.
        </p>
      )}
      <ToolFilter toolId={toolId} />
      <ErrorMessage error={error} title="The schedules could not be listed" />
      {list && (
        <>
          <p class="muted">
            {list.total.toLocaleString()} schedule{list.total === 1 ? '' : 's'}
            {toolId ? ` of ${toolId}` : ''}
          </p>
          {list.data.length === 0 && (
            <p>
              {toolId ? `${toolId} has no schedule.` : 'No schedules yet.'} A schedule runs a tool on a cron
              expression in a time zone: <strong>New schedule</strong> creates one.
            </p>
          )}
          {list.data.length > 0 && (
            <Table
              class="schedules-table"
              caption="Schedules, oldest first"
              captionHidden
              columns={['Status', 'Schedule', 'Tool', 'Next run', 'Last tick', { hidden: 'Actions' }]}
            >
              {list.data.map((schedule) => (
                // Ids are unique per tool only: two tools' schedules may share one.
                <ScheduleRow
                  key={`${schedule.toolId}/${schedule.id}`}
                  schedule={schedule}
                  mayWrite={mayWrite}
                  changed={reload}
                />
              ))}
            </Table>
          )}
          {(page > 1 || list.hasMore) && (
            <PageLinks
              label="Pages of schedules"
              path="/schedules"
              query={{ toolId }}
              page={page}
              hasMore={list.hasMore}
            />
          )}
        </>
      )}
    </section>
  );
}
