/**
 * The systems list: every variant the key may see (GET /v1/systems, 50 a page), with where it is, how it
 * authenticates, whether its credentials are stored (key names only), its OAuth token and its
 * documentation processing. While a documentation is pending the page reads the list again every few
 * seconds.
 */
import { useState } from 'preact/hooks';
import type { SystemList } from '../../api/types.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { PageLinks, pageOf } from '../../components/pager.tsx';
import { usePoll } from '../../components/poll.ts';
import { Table } from '../../components/table.tsx';
import { systemHref } from '../../hrefs.ts';
import { Link, location } from '../../router.tsx';
import { session } from '../../session.ts';
import { canWriteSystems, listSystems } from './api.ts';
import { AUTH_LABELS, attemptsText, CredentialsStatus, DocumentationStatus, OAuthStatus } from './status.tsx';

const PAGE_SIZE = 50;
const POLL_MS = 3_000;

export function SystemsPage() {
  const page = pageOf(location.value.query);
  const [list, setList] = useState<SystemList>();
  const [error, setError] = useState<unknown>();
  const me = session.value?.me;

  usePoll(
    async (signal) => {
      try {
        const answer = await listSystems(page, PAGE_SIZE, signal);
        setList(answer);
        setError(undefined);
        return answer.data.some((system) => system.documentation?.status === 'pending');
      } catch (caught) {
        if (!signal.aborted) setError(caught);
        return false;
      }
    },
    POLL_MS,
    [page],
  );

  return (
    <section aria-labelledby="systems-title">
      <div class="page-head">
        <h1 id="systems-title">Systems</h1>
        {me && canWriteSystems(me) && (
          <Link href="/systems/new" class="button-link">
            New system
          </Link>
        )}
      </div>
      <ErrorMessage error={error} title="The systems could not be listed" />
      {!list && !error && <p role="status">Loading…</p>}
      {list && list.data.length === 0 && (
        <p>No systems{me?.systemIds ? ' that this API key may use' : ''} yet.</p>
      )}
      {list && list.data.length > 0 && (
        <>
          <p class="muted">
            {list.total} system variant{list.total === 1 ? '' : 's'}
          </p>
          <Table
            class="systems-table"
            caption="Systems and their variants, by id"
            captionHidden
            columns={[
              'System',
              'Environment',
              'Where',
              'Authentication',
              'Credentials',
              'OAuth',
              'Documentation',
            ]}
          >
            {list.data.map((system) => {
              const attempts = system.documentation && attemptsText(system.documentation);
              return (
                <tr key={`${system.id}/${system.environment}`}>
                  <td>
                    <Link href={systemHref(system.id)}>{system.id}</Link>
                    {system.name && system.name !== system.id && <div class="muted">{system.name}</div>}
                  </td>
                  <td>{system.environment}</td>
                  <td>
                    {system.gateway ? (
                      <>
                        gateway <code>{system.gateway.tunnelId}</code> → <code>{system.gateway.target}</code>
                      </>
                    ) : (
                      (system.url ?? '—')
                    )}
                  </td>
                  <td>{AUTH_LABELS[system.authType ?? 'none']}</td>
                  <td>
                    <CredentialsStatus system={system} />
                  </td>
                  <td>{system.oauth ? <OAuthStatus oauth={system.oauth} withExpiry /> : '—'}</td>
                  <td>
                    {system.documentation ? (
                      <>
                        <DocumentationStatus state={system.documentation} />
                        {attempts && <div class="muted">{attempts}</div>}
                      </>
                    ) : (
                      '—'
                    )}
                  </td>
                </tr>
              );
            })}
          </Table>
          <PageLinks label="Pages of systems" path="/systems" page={page} hasMore={list.hasMore} />
        </>
      )}
    </section>
  );
}
