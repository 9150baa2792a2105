/**
 * One system: its prod and dev variants side by side (GET /v1/systems?systemId=, one read), each with where
 * it is, its authentication and stored credential keys (never values), a connection test (or, for MSSQL
 * and MongoDB, that no step can use them yet), its OAuth token with Connect, and its documentation with
 * upload and search. While a documentation is being processed the page reads the
 * variants again every few seconds, so its status moves on its own.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Environment, System } from '../../api/types.ts';
import { ErrorMessage } from '../../components/error-message.tsx';
import { Fact } from '../../components/fact.tsx';
import { formatTime } from '../../components/format.ts';
import { usePoll } from '../../components/poll.ts';
import { systemHref } from '../../hrefs.ts';
import type { PageProps } from '../../pages.tsx';
import { Link, location, navigate, withQuery } from '../../router.tsx';
import { session } from '../../session.ts';
import { canTestConnections, canWriteSystems, ENVIRONMENTS, getVariants } from './api.ts';
import { ConnectionTest, NotYetNotice } from './connection-test.tsx';
import { DocumentationPanel } from './documentation.tsx';
import { OAuthPanel, type OAuthReturn, OAuthReturnNote } from './oauth.tsx';
import { notYetName, PROTOCOLS, protocolOfSystem } from './protocols.ts';
import { AUTH_LABELS, CredentialsStatus } from './status.tsx';

export const SYSTEM_POLL_MS = 1_500;

const ENVIRONMENT_NAMES: Record<Environment, string> = {
  prod: 'Production (prod)',
  dev: 'Development (dev)',
};

type Variants = Partial<Record<Environment, System>>;

/** The system's rateLimit and what its budget did, across every replica (rateLimitUse). */
function RateBudget({ system }: { system: System }) {
  const limit = system.rateLimit;
  if (!limit) return <>none (requests are not held back)</>;
  const parts = [
    limit.requestsPerSecond !== undefined && `${limit.requestsPerSecond} requests/s`,
    limit.burst !== undefined && `bursts of ${limit.burst}`,
    limit.maxConcurrent !== undefined && `${limit.maxConcurrent} in flight`,
  ].filter(Boolean);
  const use = system.rateLimitUse;
  return (
    <>
      {parts.join(', ')}
      {use ? (
        <p class="muted budget-use">
          {use.requests} requests, {use.waits} waited ({(use.waitMs / 1000).toFixed(1)} s in all),{' '}
          {use.throttled} answered 429/503 · now: {use.inFlight} in flight
          {use.backlogMs > 0 ? `, next free in ${(use.backlogMs / 1000).toFixed(1)} s` : ', free'}
          {use.pausedUntil ? `, paused until ${formatTime(use.pausedUntil)}` : ''}
        </p>
      ) : (
        <p class="muted budget-use">not used yet</p>
      )}
    </>
  );
}

function Variant(props: { system: System; canWrite: boolean; canTest: boolean; changed(): void }) {
  const { system, canWrite, canTest, changed } = props;
  const edit = withQuery(`${systemHref(system.id)}/edit`, {
    environment: system.environment,
  });
  const protocol = protocolOfSystem(system);
  const notYet = notYetName(protocol);
  return (
    <>
      <dl class="facts">
        {system.name && <Fact term="Name">{system.name}</Fact>}
        <dt>Protocol</dt>
        <dd>{system.url ? PROTOCOLS[protocol].label : 'from the connection URL in the credentials'}</dd>
        <dt>URL</dt>
        <dd class="overflow-anywhere">{system.url ? <code>{system.url}</code> : '—'}</dd>
        {system.gateway && (
          <Fact term="Gateway">
            <code>{system.gateway.tunnelId}</code>, target <code>{system.gateway.target}</code>
          </Fact>
        )}
        <dt>Authentication</dt>
        <dd>{AUTH_LABELS[system.authType ?? 'none']}</dd>
        <dt>Credentials</dt>
        <dd>
          <CredentialsStatus system={system} />
        </dd>
        {system.apiKeyPlacement && (
          <Fact term="API key sent">
            in the {system.apiKeyPlacement.in}
            {system.apiKeyPlacement.name ? (
              <>
                {' '}
                <code>{system.apiKeyPlacement.name}</code>
              </>
            ) : null}{' '}
            <span class="muted">(decided by the {system.apiKeyPlacement.source})</span>
          </Fact>
        )}
        <dt>Rate budget</dt>
        <dd>
          <RateBudget system={system} />
        </dd>
        <dt>Code access</dt>
        <dd>{system.codeAccess ? 'tool code may read the credentials' : 'no (templates only)'}</dd>
        <dt>Updated</dt>
        <dd>{formatTime(system.updatedAt)}</dd>
      </dl>
      {canWrite && (
        <p>
          <Link href={edit} class="button-link">
            Edit {system.environment}
          </Link>
        </p>
      )}
      {notYet ? (
        <NotYetNotice name={notYet} />
      ) : (
        canTest && (
          <ConnectionTest
            systemId={system.id}
            environment={system.environment}
            label={`Test ${system.environment} connection`}
          />
        )
      )}
      {system.authType === 'oauth' && <OAuthPanel system={system} canWrite={canWrite} />}
      <DocumentationPanel system={system} canWrite={canWrite} changed={changed} />
    </>
  );
}

function oauthReturnOf(query: URLSearchParams): OAuthReturn | undefined {
  const outcome = query.get('oauth');
  if (outcome !== 'connected' && outcome !== 'failed') return undefined;
  const environment: Environment = query.get('environment') === 'dev' ? 'dev' : 'prod';
  return {
    environment,
    connected: outcome === 'connected',
    ...(query.get('error') ? { code: query.get('error') as string } : {}),
  };
}

export function SystemPage({ params }: PageProps) {
  const systemId = params.systemId as string;
  const [variants, setVariants] = useState<Variants>();
  const [error, setError] = useState<unknown>();
  const [reads, setReads] = useState(0);
  // Read once: the address is cleaned of the callback's outcome, the note stays until the next page.
  const [returned] = useState(() => oauthReturnOf(location.value.query));
  const me = session.value?.me;
  const canWrite = me ? canWriteSystems(me) : false;
  const canTest = me ? canTestConnections(me) : false;

  useEffect(() => {
    if (returned) navigate(systemHref(systemId), { replace: true });
  }, []);

  usePoll(
    async (signal) => {
      try {
        const found = await getVariants(systemId, signal);
        setVariants(found);
        setError(undefined);
        return Object.values(found).some((system) => system.documentation?.status === 'pending');
      } catch (caught) {
        if (!signal.aborted) setError(caught);
        return false;
      }
    },
    SYSTEM_POLL_MS,
    [systemId, reads],
  );

  const changed = () => setReads((n) => n + 1);
  const missing = variants && !variants.prod && !variants.dev;
  const some = variants?.prod ?? variants?.dev;
  return (
    <section aria-labelledby="system-title">
      <div class="page-head">
        <h1 id="system-title">
          System {systemId}
          {some?.name && some.name !== systemId ? <span class="muted"> · {some.name}</span> : null}
        </h1>
        <Link href="/systems">All systems</Link>
      </div>
      {returned && <OAuthReturnNote outcome={returned} />}
      <ErrorMessage error={error} title="The system could not be read" />
      {missing && <p>There is no system {systemId}, or this API key may not use it.</p>}
      {!variants && !error && <p role="status">Loading…</p>}
      {variants && !missing && (
        <div class="variants">
          {ENVIRONMENTS.map((environment) => {
            const system = variants[environment];
            return (
              <section key={environment} class="variant" aria-labelledby={`variant-${environment}`}>
                <h2 id={`variant-${environment}`}>{ENVIRONMENT_NAMES[environment]}</h2>
                {system ? (
                  <Variant system={system} canWrite={canWrite} canTest={canTest} changed={changed} />
                ) : (
                  <>
                    <p class="muted">
                      No {environment} variant: the {environment === 'prod' ? 'dev' : 'prod'} variant serves
                      runs of both modes.
                    </p>
                    {canWrite && (
                      <Link
                        href={withQuery('/systems/new', { id: systemId, environment })}
                        class="button-link"
                      >
                        Add a {environment} variant
                      </Link>
                    )}
                  </>
                )}
              </section>
            );
          })}
        </div>
      )}
    </section>
  );
}
