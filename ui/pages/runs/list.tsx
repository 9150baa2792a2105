/**
 * The runs list: GET /v1/runs with its filters (tool, status, request source, system, time range), kept in
 * the page's URL (folded behind a "Filters" button on a phone's screen), paged by cursor. The first page updates live by polling the same query every few
 * seconds while the tab is visible: /v1/logs/stream follows one run or one trace, not a list, and one
 * indexed page query every 5 s costs the server less than a stream per open tab would.
 */
import { useRef, useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import type { ListRunsQuery, RunList } from '../../api/types.ts';
import { REQUEST_SOURCES, RUN_STATUSES } from '../../api/types.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { LabelledField } from '../../components/field.tsx';
import { ClearFilters, filtersOf } from '../../components/filters.tsx';
import { formatDuration, formatTime, isoToLocalInput, localInputToIso } from '../../components/format.ts';
import { LiveUpdates } from '../../components/live.tsx';
import { useNarrowScreen } from '../../components/narrow-screen.ts';
import { Pager } from '../../components/pager.tsx';
import { usePoll } from '../../components/poll.ts';
import { StatusBadge } from '../../components/status.tsx';
import { Table } from '../../components/table.tsx';
import { runHref } from '../../hrefs.ts';
import { Link, location, navigate, withQuery } from '../../router.tsx';
import { client } from '../../session.ts';

export const RUNS_POLL_MS = 5_000;
const PAGE_SIZE = '50';
const FILTERS = ['toolId', 'status', 'requestSources', 'systemId', 'startedAfter', 'startedBefore'] as const;
type Filter = (typeof FILTERS)[number];

/** Cursors of the pages before the current one, to go back to newer runs. */
const newerCursors: string[] = [];

type FieldSpec = { name: Filter; label: string } & (
  | { kind: 'text'; placeholder: string }
  | { kind: 'choice'; any: string; options: readonly string[] }
  | { kind: 'time' }
);

const FIELDS: readonly FieldSpec[] = [
  { name: 'toolId', label: 'Tool', kind: 'text', placeholder: 'any tool' },
  { name: 'status', label: 'Status', kind: 'choice', any: 'any status', options: RUN_STATUSES },
  {
    name: 'requestSources',
    label: 'Request source',
    kind: 'choice',
    any: 'any source',
    options: REQUEST_SOURCES,
  },
  { name: 'systemId', label: 'System', kind: 'text', placeholder: 'any system' },
  { name: 'startedAfter', label: 'Started from', kind: 'time' },
  { name: 'startedBefore', label: 'Started before', kind: 'time' },
];

/** One filter: text is applied on change (Enter or leaving the field), a choice or a time at once. */
function FilterField(props: {
  spec: FieldSpec;
  value: string | undefined;
  change(value: string | undefined): void;
}) {
  const { spec, value, change } = props;
  const id = `filter-${spec.name}`;
  const changed = (event: Event) => (event.currentTarget as HTMLInputElement | HTMLSelectElement).value;
  return (
    <LabelledField id={id} label={spec.label}>
      {spec.kind === 'text' && (
        <input
          id={id}
          type="text"
          placeholder={spec.placeholder}
          value={value ?? ''}
          onChange={(event) => change(changed(event).trim())}
        />
      )}
      {spec.kind === 'choice' && (
        <select id={id} value={value ?? ''} onChange={(event) => change(changed(event))}>
          <option value="">{spec.any}</option>
          {spec.options.map((option) => (
            <option key={option} value={option}>
              {option}
            </option>
          ))}
        </select>
      )}
      {spec.kind === 'time' && (
        <input
          id={id}
          type="datetime-local"
          value={isoToLocalInput(value)}
          onChange={(event) => change(localInputToIso(changed(event)))}
        />
      )}
    </LabelledField>
  );
}

function FilterForm({ filters }: { filters: Partial<Record<Filter, string>> }) {
  const change = (name: Filter, value: string | undefined) => {
    newerCursors.length = 0;
    navigate(withQuery('/runs', { ...filters, [name]: value }), { replace: true });
  };
  // On a phone the six fields would fill the first screen: they fold behind a button naming how many apply.
  const narrow = useNarrowScreen();
  const [unfolded, setUnfolded] = useState(false);
  const active = Object.keys(filters).length;
  return (
    <>
      {narrow && (
        <button
          type="button"
          class="secondary filters-toggle"
          aria-expanded={unfolded}
          aria-controls="run-filters"
          onClick={() => setUnfolded(!unfolded)}
        >
          Filters{active > 0 ? ` (${active} applied)` : ''}
        </button>
      )}
      <form
        id="run-filters"
        class="filters"
        aria-label="Filter runs"
        hidden={narrow && !unfolded}
        onSubmit={(event) => event.preventDefault()}
      >
        {FIELDS.map((spec) => (
          <FilterField
            key={spec.name}
            spec={spec}
            value={filters[spec.name]}
            change={(value) => change(spec.name, value)}
          />
        ))}
        <ClearFilters filters={filters} path="/runs" />
      </form>
    </>
  );
}

export function RunsPage() {
  const query = location.value.query;
  const filters = filtersOf(query, FILTERS);
  const cursor = query.get('cursor') ?? undefined;
  const key = withQuery('', { ...filters, cursor });
  const [page, setPage] = useState<RunList>();
  const [error, setError] = useState<unknown>();
  const [updatedAt, setUpdatedAt] = useState<Date>();
  const [live, setLive] = useState(true);
  const marked = useRef(false);

  usePoll(
    async (signal) => {
      const request: ListRunsQuery = { ...filters, limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) };
      try {
        const answer = await client().call(routes.listRuns, { query: request, signal });
        setPage(answer);
        setError(undefined);
        setUpdatedAt(new Date());
        if (!marked.current) {
          marked.current = true;
          // The bench (bench/ui.ts) reads this mark: the list is on screen and usable.
          requestAnimationFrame(() => performance.mark('kubeglue:runs-list-ready'));
        }
      } catch (caught) {
        if (!signal.aborted) setError(caught);
      }
    },
    // Only the newest page changes as runs come; older pages stay as they were read.
    live && !cursor ? RUNS_POLL_MS : undefined,
    [key, live],
  );

  const older = () => {
    if (!page?.nextCursor) return;
    newerCursors.push(cursor ?? '');
    navigate(withQuery('/runs', { ...filters, cursor: page.nextCursor }));
  };
  const newer = () => {
    const previous = newerCursors.pop();
    navigate(withQuery('/runs', { ...filters, cursor: previous || undefined }));
  };

  return (
    <section aria-labelledby="runs-title">
      <div class="page-head">
        <h1 id="runs-title">Runs</h1>
        <LiveUpdates
          live={live}
          onChange={setLive}
          status={
            cursor
              ? 'Older runs: updates show on the newest page'
              : updatedAt
                ? `Updated ${updatedAt.toLocaleTimeString()}`
                : 'Loading…'
          }
        />
      </div>
      <FilterForm filters={filters} />
      <ErrorMessage error={error} title="The runs could not be listed" />
      {page && (
        <>
          <p class="muted">
            {/* Beyond the count's cap (10 000) the API counts no further: total is a lower bound. */}
            {page.total.toLocaleString()}
            {page.totalExact ? '' : '+'} run{page.total === 1 && page.totalExact ? '' : 's'}
            {Object.keys(filters).length > 0 ? ' match these filters' : ''}
          </p>
          {page.data.length === 0 ? (
            <p>No runs match these filters.</p>
          ) : (
            <Table
              class="runs-table"
              caption="Runs, newest first"
              captionHidden
              columns={['Status', 'Run', 'Tool', 'Source', 'Started', 'Duration']}
            >
              {page.data.map((run) => (
                // data-label: a narrow screen shows each run as a card, each value after its column's name.
                <tr key={run.runId}>
                  <td data-label="Status">
                    <StatusBadge status={run.status} />
                  </td>
                  <td data-label="Run">
                    <Link href={runHref(run.runId)}>{run.runId}</Link>
                  </td>
                  <td data-label="Tool">{run.toolId}</td>
                  <td data-label="Source">{run.requestSource ?? 'api'}</td>
                  <td data-label="Started">{formatTime(run.metadata.startedAt)}</td>
                  <td data-label="Duration">{formatDuration(run.metadata.durationMs)}</td>
                </tr>
              ))}
            </Table>
          )}
          <Pager
            label="Pages of runs"
            previous={cursor ? newer : undefined}
            next={page.nextCursor ? older : undefined}
            previousText="Newer runs"
            nextText="Older runs"
          />
        </>
      )}
    </section>
  );
}
