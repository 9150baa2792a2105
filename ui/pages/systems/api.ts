/**
 * The /v1 calls of the systems pages, through the signed-in key's client: systems and their variants,
 * documentation (upload, search), the OAuth authorization-code flow, the connected gateways a private
 * system is reached through, and the connection test.
 */
import * as routes from '../../../contract/api/route-paths.ts';
import { ApiFailure } from '../../api/client.ts';
import type {
  ConnectionTestResult,
  DocumentationSearchAnswer,
  DocumentationState,
  Environment,
  GatewayList,
  OAuthAuthorization,
  System,
  SystemCreateBody,
  SystemList,
  SystemUpdateBody,
} from '../../api/types.ts';
import { client } from '../../session.ts';

export const ENVIRONMENTS: readonly Environment[] = ['prod', 'dev'];

export function listSystems(page: number, limit: number, signal?: AbortSignal): Promise<SystemList> {
  return client().call(routes.listSystems, { query: { page, limit }, signal });
}

/**
 * Both variants of a system in one read (`GET /v1/systems?systemId=`): a variant it lacks is simply not in
 * the answer, where asking for it by environment would be a 404 the browser logs as an error.
 */
export async function getVariants(
  systemId: string,
  signal?: AbortSignal,
): Promise<Partial<Record<Environment, System>>> {
  const list = await client().call(routes.listSystems, {
    query: { systemId, limit: ENVIRONMENTS.length },
    signal,
  });
  return Object.fromEntries(list.data.map((system) => [system.environment, system]));
}

/** One variant; undefined when the system has no variant of that environment (404). */
export async function getVariant(
  systemId: string,
  environment: Environment,
  signal?: AbortSignal,
): Promise<System | undefined> {
  try {
    const answer = await client().call(routes.getSystem, {
      params: { systemId },
      query: { environment },
      signal,
    });
    return answer.data;
  } catch (error) {
    if (error instanceof ApiFailure && error.status === 404) return undefined;
    throw error;
  }
}

export async function createSystem(body: SystemCreateBody): Promise<System> {
  return (await client().call(routes.createSystem, { body })).data;
}

/** PATCH: only the fields given change; a credential sent as its placeholder keeps its stored value. */
export async function updateSystem(
  systemId: string,
  environment: Environment,
  body: SystemUpdateBody,
): Promise<System> {
  const answer = await client().call(routes.patchSystem, {
    params: { systemId },
    query: { environment },
    body,
  });
  return answer.data;
}

export async function uploadDocumentation(
  systemId: string,
  environment: Environment,
  file: File,
): Promise<DocumentationState> {
  const answer = await client().call(routes.uploadSystemDocumentation, {
    params: { systemId },
    query: { environment, filename: file.name },
    body: file,
  });
  return answer.data;
}

export function searchDocumentation(
  systemId: string,
  environment: Environment,
  keywords: string,
): Promise<DocumentationSearchAnswer> {
  return client().call(routes.searchSystemDocumentation, {
    params: { systemId },
    query: { environment },
    body: { keywords, limit: 10 },
  });
}

/**
 * Starts the authorization-code flow: the provider's URL, and the callback sends the browser back to
 * `returnTo` (this system's page) with the outcome in its query.
 */
export async function authorizeOAuth(
  systemId: string,
  environment: Environment,
  returnTo: string,
): Promise<OAuthAuthorization['data']> {
  const answer = await client().call(routes.authorizeSystemOAuth, {
    params: { systemId },
    query: { environment, returnTo },
  });
  return answer.data;
}

export function listGateways(signal?: AbortSignal): Promise<GatewayList> {
  return client().call(routes.listGateways, { signal });
}

/** Whether the signed-in key may create and change systems. */
export function canWriteSystems(me: { admin: boolean; scopes: readonly string[] }): boolean {
  return me.admin || me.scopes.includes('systems:write');
}

/** One harmless read against the variant with its stored credentials (POST /v1/systems/{id}/test). */
export function testConnection(systemId: string, environment: Environment): Promise<ConnectionTestResult> {
  return client().call(routes.testSystemConnection, { params: { systemId }, query: { environment } });
}

/** Whether the signed-in key may test connections: the route needs systems:read and runs:execute. */
export function canTestConnections(me: { admin: boolean; scopes: readonly string[] }): boolean {
  return me.admin || (me.scopes.includes('systems:read') && me.scopes.includes('runs:execute'));
}
