/**
 * Testing a system's connection (`POST /v1/systems/{id}/test`): one harmless read chosen by the system's
 * protocol, run as a one-step tool through the path every run takes (accept.ts: the save-time checks, the
 * key's systems, a sync slot; the worker pool: the egress guard, a gateway for private systems, the
 * system's credentials only for its own origins, OAuth tokens, the deadline, redaction of the error). It
 * is not recorded: a test is no run a user wants in the runs list; the server's log keeps one line per
 * test (who, which variant, the outcome), as the audit trail (docs/systems-and-credentials.md).
 */
import { KG_ERR_PROTOCOL_UNSUPPORTED, KG_ERR_SYSTEM_NO_URL } from '../contract/api/errors.ts';
import type { ConnectionTestProtocol, ConnectionTestResult, System } from '../contract/api/system.ts';
import { Tool, type ToolStepInput } from '../contract/api/tool.ts';
import { literalScheme, schemeProblem, stepScheme } from '../contract/step-protocols.ts';
import { statusOfHttpStepError } from '../engine/protocols/http-status.ts';
import { isGraphqlEndpoint } from '../systems/documentation/parsers/graphql-schema.ts';
import { accept } from './accept.ts';
import type { Caller, RunContext } from './context.ts';

/** The run deadline of a test: long enough for a slow login, short enough to wait for in a form. */
export const CONNECTION_TEST_TIMEOUT_MS = 15_000;
const STEP_ID = 'connection';
/** HTTP answers that say the credentials were refused; any other below 500 means reachable and let in. */
const REFUSED_STATUSES = new Set([401, 403]);

export interface ConnectionTestInput {
  /** The variant to test, as the API presents it (credentials as placeholders). */
  system: System;
  caller: Caller;
  traceId: string;
  /** The client went away: the test stops (nobody could see its outcome). */
  signal?: AbortSignal;
}

/** The read for a protocol, and how the answer says what was tried. */
interface HarmlessRead {
  protocol: ConnectionTestProtocol;
  config: ToolStepInput['config'];
  tried: string;
}

/** `mysql://db.internal:3306/shop` of a connection URL: its login and query left out. */
function withoutLogin(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return 'the connection URL in credentials.url';
  }
}

/** The GraphQL endpoint of an HTTP system: its URL, or its documentation URL, when either is one. */
function graphqlEndpointOf(system: System): string | undefined {
  for (const candidate of [system.url, system.documentationUrl]) {
    if (candidate === undefined || !isGraphqlEndpoint(candidate)) continue;
    const endpoint = new URL(candidate);
    // `#graphql` is a hint to kubeglue, never sent.
    endpoint.hash = '';
    return endpoint.toString();
  }
  return undefined;
}

/**
 * The read that tests `system`: from its url, else from the connection URL in its credentials (given
 * decrypted as `connectionUrl`; the step then names it `<<id_url>>`, as a tool would).
 */
export function harmlessRead(system: System, connectionUrl: string | undefined): HarmlessRead {
  const address = system.url || connectionUrl;
  if (!address) throw KG_ERR_SYSTEM_NO_URL(system.id, system.environment);
  const url = system.url || `<<${system.id}_url>>`;
  const where = system.url || withoutLogin(address);
  const scheme = literalScheme(address) ?? '';
  const protocol = stepScheme(scheme)?.protocol;
  if (protocol === undefined) {
    const message = scheme ? schemeProblem(scheme) : `'${where}' has no scheme`;
    throw KG_ERR_PROTOCOL_UNSUPPORTED([
      { path: ['url'], field: 'url', message: message ?? 'no step speaks it', unsupportedScheme: scheme },
    ]);
  }
  const base = { systemId: system.id, url };
  switch (protocol) {
    case 'http': {
      const endpoint = graphqlEndpointOf(system);
      if (endpoint) {
        return {
          protocol: 'graphql',
          config: { ...base, url: endpoint, method: 'POST', graphql: { query: '{ __typename }' } },
          tried: `GraphQL query { __typename } at ${endpoint}`,
        };
      }
      return { protocol, config: { ...base, method: 'GET' }, tried: `GET ${where}` };
    }
    case 'postgres':
    case 'mysql':
      return { protocol, config: { ...base, body: { query: 'SELECT 1' } }, tried: `SELECT 1 on ${where}` };
    case 'redis':
      // DBSIZE: flagged readonly in the server's command table (PING is not), so modify: false runs it.
      return { protocol, config: { ...base, body: { command: 'DBSIZE' } }, tried: `DBSIZE on ${where}` };
    case 'ftp':
    case 'sftp':
    case 'smb':
      return { protocol, config: { ...base, body: { operation: 'list' } }, tried: `list of ${where}` };
  }
}

/** The decrypted connection URL of a system that has no url of its own (resolved as a run resolves it). */
async function connectionUrlOf(ctx: RunContext, system: System): Promise<string | undefined> {
  if (system.url || !('url' in system.credentials)) return undefined;
  const [resolved] = await ctx.deps.systems.resolveForRun([system.id], system.environment);
  return resolved?.credentials.url;
}

/** Runs the read and says how it went; throws only what refuses the test before it runs. */
export async function testConnection(
  ctx: RunContext,
  input: ConnectionTestInput,
): Promise<ConnectionTestResult> {
  const { system, caller } = input;
  const read = harmlessRead(system, await connectionUrlOf(ctx, system));
  const tool = Tool.parse({
    id: `connection-test:${system.id}`,
    steps: [{ id: STEP_ID, config: read.config }],
  });
  const started = await ctx.slots.admit(false, () =>
    accept(ctx, {
      tool,
      request: { options: { timeout: CONNECTION_TEST_TIMEOUT_MS }, includeStepResultData: false },
      caller,
      traceId: input.traceId,
      async: false,
      record: false,
      validate: true,
      mode: system.environment,
      signal: input.signal,
    }),
  );
  const { run } = started;
  const step = run.stepResults?.find((result) => result.stepId === STEP_ID);
  let success = step?.success === true;
  let error = success ? undefined : (step?.error ?? run.error ?? 'the read did not run');
  let detail: string | undefined;
  const status = read.protocol === 'http' && error !== undefined ? statusOfHttpStepError(error) : undefined;
  if (status !== undefined && status < 500 && !REFUSED_STATUSES.has(status)) {
    success = true;
    error = undefined;
    detail =
      `HTTP ${status}: the server answered and did not refuse the credentials ` +
      '(any status below 500 other than 401 and 403 counts as reachable)';
  }
  const durationMs = step?.durationMs ?? run.metadata.durationMs ?? 0;
  ctx.deps.log?.(
    `connection test of system '${system.id}' (${system.environment}) by API key ${caller.id}: ` +
      `${success ? 'ok' : 'failed'} in ${durationMs} ms`,
    {
      systemId: system.id,
      environment: system.environment,
      keyId: caller.id,
      success,
      ms: durationMs,
      traceId: run.traceId ?? input.traceId,
    },
  );
  return {
    systemId: system.id,
    environment: system.environment,
    protocol: read.protocol,
    success,
    tried: read.tried,
    durationMs,
    ...(error !== undefined ? { error } : {}),
    ...(detail !== undefined ? { detail } : {}),
    ...(step?.notes?.length ? { notes: step.notes } : {}),
    testedAt: new Date().toISOString(),
  };
}
