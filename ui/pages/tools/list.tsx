/**
 * The tools list: GET /v1/tools with a search (every word in the id, name, instruction or folder), a folder
 * (from the answer's `folders`, so every folder is offered whatever page is shown) and which tools to show
 * (active, all, archived only), kept in the page's URL; 50 a page. A key limited to tools sees only those.
 */
import { useEffect, useState } from 'preact/hooks';
import * as routes from '../../../contract/api/route-paths.ts';
import type { ListToolsQuery, ToolList } from '../../api/types.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { ChoiceField, LabelledField } from '../../components/field.tsx';
import { ClearFilters, filtersOf } from '../../components/filters.tsx';
import { formatTime } from '../../components/format.ts';
import { PageLinks, pageOf } from '../../components/pager.tsx';
import { usePolled } from '../../components/poll.ts';
import { Table } from '../../components/table.tsx';
import { toolHref } from '../../hrefs.ts';
import { Link, location, navigate, withQuery } from '../../router.tsx';
import { client, session } from '../../session.ts';
import { ToolState } from './shared.tsx';

const PAGE_SIZE = 50;
const FILTERS = ['search', 'folder', 'archived'] as const;
type Filter = (typeof FILTERS)[number];
type Filters = Partial<Record<Filter, string>>;

const SHOWN = [
  { value: '', text: 'Active tools', includeArchived: 'false' },
  { value: 'all', text: 'Active and archived', includeArchived: 'true' },
  { value: 'only', text: 'Archived only', includeArchived: 'only' },
] as const;

function FilterForm({ filters, folders }: { filters: Filters; folders: ToolList['folders'] }) {
  const [search, setSearch] = useState(filters.search ?? '');
  // Another address (back, a folder link) brings its own search.
  useEffect(() => setSearch(filters.search ?? ''), [filters.search]);
  const change = (name: Filter, value: string | undefined) =>
    navigate(withQuery('/tools', { ...filters, [name]: value || undefined }), { replace: true });
  return (
    <form
      class="filters"
      aria-label="Filter tools"
      onSubmit={(event) => {
        event.preventDefault();
        change('search', search.trim());
      }}
    >
      <LabelledField id="tools-search" label="Search" class="tools-search">
        <input
          id="tools-search"
          type="search"
          placeholder="id, name, instruction or folder"
          value={search}
          onInput={(event) => setSearch(event.currentTarget.value)}
          onChange={(event) => change('search', event.currentTarget.value.trim())}
        />
      </LabelledField>
      <ChoiceField
        id="tools-folder"
        label="Folder"
        value={filters.folder ?? ''}
        none="All folders"
        choices={folders.map((folder) => ({ value: folder.path, text: `${folder.path} (${folder.tools})` }))}
        keep={(folder) => folder}
        change={(folder) => change('folder', folder)}
      />
      <ChoiceField
        id="tools-archived"
        label="Show"
        value={filters.archived ?? ''}
        choices={SHOWN}
        change={(archived) => change('archived', archived)}
      />
      <button type="submit" class="secondary">
        Search
      </button>
      <ClearFilters filters={filters} path="/tools" />
    </form>
  );
}

export function ToolsPage() {
  const query = location.value.query;
  const filters = filtersOf(query, FILTERS);
  const page = pageOf(query);
  const key = withQuery('', { ...filters, page: String(page) });
  const canWrite = session.value?.me.scopes.includes('tools:write') ?? false;

  const { answer: list, error } = usePolled(
    (signal) => {
      const shown = SHOWN.find((option) => option.value === (filters.archived ?? '')) ?? SHOWN[0];
      const request: ListToolsQuery = {
        page: String(page),
        limit: String(PAGE_SIZE),
        includeArchived: shown.includeArchived,
        ...(filters.search ? { search: filters.search } : {}),
        ...(filters.folder ? { folder: filters.folder } : {}),
      };
      return client().call(routes.listTools, { query: request, signal });
    },
    undefined,
    [key],
  );

  const pages = list ? Math.max(1, Math.ceil(list.total / list.limit)) : 1;
  const filtered = Object.keys(filters).length > 0;

  return (
    <section aria-labelledby="tools-title">
      <div class="page-head">
        <h1 id="tools-title">Tools</h1>
        {canWrite && (
          <Link href="/new/tool" class="button-link">
            New tool
          </Link>
        )}
      </div>
      <FilterForm filters={filters} folders={list?.folders ?? []} />
      <ErrorMessage error={error} title="The tools could not be listed" />
      {list && (
        <>
          <p class="muted" role="status">
            {list.total.toLocaleString()} tool{list.total === 1 ? '' : 's'}
            {filtered ? ' match these filters' : ''}
          </p>
          {list.data.length === 0 ? (
            <p>
              {filtered
                ? 'No tool matches these filters.'
                : canWrite
                  ? 'No tools yet: create one with New tool.'
                  : 'No tools this key may see.'}
            </p>
          ) : (
            <Table
              class="tools-table"
              caption="Tools, by id"
              captionHidden
              columns={['Tool', 'Folder', 'Steps', 'State', 'Updated']}
            >
              {list.data.map((tool) => (
                <tr key={tool.id}>
                  <td>
                    <Link href={toolHref(tool.id)}>{tool.id}</Link>
                    {tool.name && tool.name !== tool.id && <div class="muted">{tool.name}</div>}
                  </td>
                  <td>
                    {tool.folder ? (
                      <Link href={withQuery('/tools', { ...filters, folder: tool.folder, page: undefined })}>
                        {tool.folder}
                      </Link>
                    ) : (
                      '—'
                    )}
                  </td>
                  <td>{tool.steps.length}</td>
                  <td>
                    <ToolState archived={tool.archived} />
                  </td>
                  <td>{formatTime(tool.updatedAt)}</td>
                </tr>
              ))}
            </Table>
          )}
          {pages > 1 && (
            <PageLinks
              label="Pages of tools"
              path="/tools"
              query={filters}
              page={page}
              hasMore={list.hasMore}
              position={`Page ${page} of ${pages}`}
            />
          )}
        </>
      )}
    </section>
  );
}
