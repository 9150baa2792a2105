import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { Agent, type Dispatcher, request } from 'undici';
import { stringify } from 'yaml';

/**
 * Everything a test needs to reach a running test control plane. Plain data, so the global setup can
 * hand it to test workers with `project.provide`.
 */
export interface KubeConnection {
  /** https://127.0.0.1:<port> */
  url: string;
  caPem: string;
  /** Bearer token of each static user (`admin` and the extra users), by user name. */
  tokens: Record<string, string>;
  adminToken: string;
  auditLogPath: string;
  tempDir: string;
  /** Kubeconfig of the admin user (group system:masters), already written. */
  kubeconfigPath: string;
  /** A serving cert for 127.0.0.1/localhost signed by the cluster CA, for the fault proxy or webhook servers. */
  loopbackTls: { certPem: string; keyPem: string };
  /** Whether kube-controller-manager runs (GC, namespace finalization, default ServiceAccounts). */
  controllerManager: boolean;
  /** gitVersion of the API server, e.g. v1.20.2. */
  serverVersion: string;
}

/** One ResponseComplete entry of the API server's audit log. */
export interface AuditEvent {
  user: string;
  groups: string[];
  verb: string;
  /** Empty for non-resource requests such as /readyz. */
  resource: string;
  subresource?: string;
  /** Empty for the core group. */
  apiGroup: string;
  namespace?: string;
  name?: string;
  code?: number;
  requestURI: string;
  timestamp: string;
}

export interface KubeResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON, or the raw text when the body is not JSON. */
  body: unknown;
}

export interface KubeRequestOptions {
  method?: string;
  body?: unknown;
  /** A user name from `tokens`; default admin. */
  user?: string;
  /** A bearer token; wins over user. */
  token?: string;
  /** Another base URL with a cert from the same CA, e.g. the fault proxy's. */
  server?: string;
  contentType?: string;
}

/** A running or provided control plane, with the helpers tests use on it. */
export interface KubeHandle extends KubeConnection {
  /**
   * Writes a complete kubeconfig (CA data, bearer token) for user; server lets it point at a fault proxy.
   * Returns path.
   */
  writeKubeconfig(path: string, user?: string, server?: string): Promise<string>;
  auditEvents(): Promise<AuditEvent[]>;
  /** Polls the audit log, which lags the response by a little, until an event matches. */
  waitForAuditEvent(match: (event: AuditEvent) => boolean, timeoutMs?: number): Promise<AuditEvent>;
  /** A raw REST call, as admin unless told otherwise. */
  request(path: string, options?: KubeRequestOptions): Promise<KubeResponse>;
}

const agents = new Map<string, Agent>();
function agentFor(caPem: string): Agent {
  let agent = agents.get(caPem);
  if (!agent) {
    agent = new Agent({ connect: { ca: caPem } });
    agents.set(caPem, agent);
  }
  return agent;
}

export async function kubeRequest(
  connection: Pick<KubeConnection, 'url' | 'caPem' | 'tokens' | 'adminToken'>,
  path: string,
  options: KubeRequestOptions = {},
): Promise<KubeResponse> {
  const token =
    options.token ?? (options.user ? connection.tokens[options.user] : connection.adminToken) ?? '';
  if (!token) throw new Error(`no token for user ${options.user}`);
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] = options.contentType ?? 'application/json';
  }
  const response = await request(new URL(path, options.server ?? connection.url), {
    method: (options.method ?? (body === undefined ? 'GET' : 'POST')) as Dispatcher.HttpMethod,
    headers,
    body,
    dispatcher: agentFor(connection.caPem),
  });
  const text = await response.body.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON (e.g. /readyz answers "ok"): keep the text.
  }
  return { status: response.statusCode, headers: response.headers, body: parsed };
}

export async function writeKubeconfig(
  connection: Pick<KubeConnection, 'url' | 'caPem' | 'tokens'>,
  path: string,
  user = 'admin',
  server = connection.url,
): Promise<string> {
  const token = connection.tokens[user];
  if (!token)
    throw new Error(`no token for user ${user}; known: ${Object.keys(connection.tokens).join(', ')}`);
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'kubeglue-test',
        cluster: { server, 'certificate-authority-data': Buffer.from(connection.caPem).toString('base64') },
      },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: `${user}@kubeglue-test`, context: { cluster: 'kubeglue-test', user } }],
    'current-context': `${user}@kubeglue-test`,
  };
  await writeFile(path, stringify(config), { mode: 0o600 });
  return path;
}

interface RawAuditEvent {
  stage?: string;
  verb?: string;
  requestURI?: string;
  stageTimestamp?: string;
  user?: { username?: string; groups?: string[] };
  objectRef?: {
    resource?: string;
    subresource?: string;
    apiGroup?: string;
    namespace?: string;
    name?: string;
  };
  responseStatus?: { code?: number };
}

export async function readAuditEvents(auditLogPath: string): Promise<AuditEvent[]> {
  const text = await readFile(auditLogPath, 'utf8').catch(() => '');
  const events: AuditEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let raw: RawAuditEvent;
    try {
      raw = JSON.parse(line) as RawAuditEvent;
    } catch {
      continue; // the last line may be half written
    }
    if (raw.stage !== 'ResponseComplete') continue;
    const ref = raw.objectRef ?? {};
    events.push({
      user: raw.user?.username ?? '',
      groups: raw.user?.groups ?? [],
      verb: raw.verb ?? '',
      resource: ref.resource ?? '',
      subresource: ref.subresource,
      apiGroup: ref.apiGroup ?? '',
      namespace: ref.namespace,
      name: ref.name,
      code: raw.responseStatus?.code,
      requestURI: raw.requestURI ?? '',
      timestamp: raw.stageTimestamp ?? '',
    });
  }
  return events;
}

export function kubeHandle(connection: KubeConnection): KubeHandle {
  return {
    ...connection,
    writeKubeconfig: (path, user, server) => writeKubeconfig(connection, path, user, server),
    auditEvents: () => readAuditEvents(connection.auditLogPath),
    waitForAuditEvent: async (match, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = (await readAuditEvents(connection.auditLogPath)).find(match);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no matching audit event after ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    request: (path, options) => kubeRequest(connection, path, options),
  };
}

export interface TestNamespace {
  name: string;
  delete(): Promise<void>;
}

/**
 * Creates a uniquely named namespace as admin. With the controller-manager running it also waits until a
 * Pod would be admitted (the `default` ServiceAccount, and on old servers its token Secret, exist), since
 * that races with the namespace's creation and the ServiceAccount admission plugin refuses Pods meanwhile.
 */
export async function createTestNamespace(
  connection: KubeConnection,
  prefix: string,
): Promise<TestNamespace> {
  const base = prefix
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 50);
  const name = `${base || 'test'}-${randomBytes(4).toString('hex')}`;
  const created = await kubeRequest(connection, '/api/v1/namespaces', {
    body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'kubeglue-test': 'true' } } },
  });
  if (created.status !== 201) {
    throw new Error(`creating namespace ${name}: HTTP ${created.status} ${JSON.stringify(created.body)}`);
  }
  if (connection.controllerManager) await waitUntilPodsAdmitted(connection, name);
  return {
    name,
    delete: async () => {
      const deleted = await kubeRequest(connection, `/api/v1/namespaces/${name}`, { method: 'DELETE' });
      if (deleted.status >= 300 && deleted.status !== 404) {
        throw new Error(`deleting namespace ${name}: HTTP ${deleted.status} ${JSON.stringify(deleted.body)}`);
      }
    },
  };
}

async function waitUntilPodsAdmitted(connection: KubeConnection, namespace: string): Promise<void> {
  const probe = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'admission-probe' },
    spec: { containers: [{ name: 'probe', image: 'registry.invalid/probe:0' }] },
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    const answer = await kubeRequest(connection, `/api/v1/namespaces/${namespace}/pods?dryRun=All`, {
      body: probe,
    });
    if (answer.status === 201) return;
    // 403: no ServiceAccount yet; 500: v1.20 also waits for its token Secret ("retry after the token is ...").
    if (![403, 500].includes(answer.status) || Date.now() > deadline) {
      throw new Error(
        `pods are not admitted in ${namespace}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
