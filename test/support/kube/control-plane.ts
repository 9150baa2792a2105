import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import { freeLoopbackPort } from '../os.ts';
import { type KubeConnection, type KubeHandle, kubeHandle, kubeRequest, writeKubeconfig } from './client.ts';
import { type ControlPlanePki, generatePki } from './pki.ts';
import {
  type Component,
  ComponentStartError,
  claimDirs,
  removeOnExit,
  startComponent,
  sweepAbandonedDirs,
  waitUntilReady,
} from './processes.ts';

export { createTestNamespace, type TestNamespace } from './client.ts';

export interface StaticUser {
  name: string;
  groups?: string[];
}

export interface ControlPlaneOptions {
  /** envtest-style directory with etcd, kube-apiserver and optionally kube-controller-manager. */
  assetsDir?: string;
  /**
   * Users besides `admin` (system:masters) in the static token file. Plain names get no group, so RBAC
   * decides what they may do.
   */
  users?: Array<string | StaticUser>;
  /** Start kube-controller-manager when the assets have it (default true). */
  controllerManager?: boolean;
  /** Extra kube-apiserver flags, e.g. `--feature-gates=...`. */
  apiserverFlags?: string[];
}

export interface ControlPlane extends KubeHandle {
  /** Log file of each component, by name (etcd, kube-apiserver, kube-controller-manager). */
  logs: Record<string, string>;
  /** How long startControlPlane took. */
  startupMs: number;
  /** The serialisable part, for `project.provide`. */
  connection: KubeConnection;
  stop(): Promise<void>;
}

export const DEFAULT_USERS: StaticUser[] = [
  { name: 'kubeglue-api' },
  { name: 'kubeglue-operator' },
  // A process-kubelet needs far more than RBAC's node role grants without the Node authorizer.
  { name: 'kubeglue-kubelet', groups: ['system:masters'] },
];

const TEMP_PREFIX = 'kubeglue-kube-';
const SERVICE_CIDR = '10.0.0.0/24';
const SA_ISSUER = 'https://kubernetes.default.svc.cluster.local';
const CONTROLLER_MANAGER_USER = 'system:kube-controller-manager';
/** Controllers that only make sense with a cloud provider; their names differ between releases. */
const CLOUD_CONTROLLERS = [
  'cloud-node-lifecycle',
  'service',
  'route',
  'cloud-node-lifecycle-controller',
  'service-lb-controller',
  'node-route-controller',
];

const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
`;

const run = promisify(execFile);

/** Starts etcd, kube-apiserver and (when present) kube-controller-manager on free loopback ports. */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const started = Date.now();
  const assets = options.assetsDir ?? process.env.KUBEBUILDER_ASSETS;
  if (!assets || !existsSync(join(assets, 'kube-apiserver'))) {
    throw new Error(`no kube-apiserver in KUBEBUILDER_ASSETS (${assets ?? 'unset'})`);
  }
  const bin = (name: string) => join(assets, name);
  const etcdBinary = existsSync(bin('etcd')) ? bin('etcd') : 'etcd';
  const withControllerManager =
    options.controllerManager !== false && existsSync(bin('kube-controller-manager'));

  await sweepAbandonedDirs(tmpdir(), TEMP_PREFIX);
  const tempDir = await mkdtemp(join(tmpdir(), TEMP_PREFIX));
  // etcd fsyncs every write; a tmpfs makes that free where etcd cannot turn it off (3.4 has no --unsafe-no-fsync).
  const etcdDir = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'kubeglue-etcd-'));
  await claimDirs(tempDir, [etcdDir]);
  const forgetDirs = [removeOnExit(tempDir), removeOnExit(etcdDir)];
  const components: Component[] = [];
  const logs: Record<string, string> = {};
  const stop = async () => {
    await Promise.all(components.map((component) => component.stop()));
    await Promise.all(
      [tempDir, etcdDir].map((dir) => rm(dir, { recursive: true, force: true, maxRetries: 3 })),
    );
    for (const forget of forgetDirs) forget();
  };

  try {
    const users = [{ name: 'admin', groups: ['system:masters'] }, ...normaliseUsers(options.users)];
    const tokens = Object.fromEntries(users.map((user) => [user.name, randomBytes(24).toString('hex')]));
    const controllerManagerToken = randomBytes(24).toString('hex');
    const tokenFile = join(tempDir, 'tokens.csv');
    const auditPolicy = join(tempDir, 'audit-policy.yaml');
    const auditLogPath = join(tempDir, 'audit.log');
    await mkdir(join(tempDir, 'logs'));
    const [pki, etcdHelp, apiserverHelp, controllerManagerHelp] = await Promise.all([
      generatePki(join(tempDir, 'pki')),
      helpText(etcdBinary),
      helpText(bin('kube-apiserver')),
      withControllerManager ? helpText(bin('kube-controller-manager')) : Promise.resolve(''),
      writeFile(auditPolicy, AUDIT_POLICY),
      writeFile(
        tokenFile,
        [
          ...users.map((user) => tokenLine(tokens[user.name] ?? '', user)),
          tokenLine(controllerManagerToken, { name: CONTROLLER_MANAGER_USER }),
        ].join(''),
        { mode: 0o600 },
      ),
    ]);
    const caPem = await readFile(pki.caCert, 'utf8');

    const startOne = async (
      name: string,
      binary: string,
      portCount: number,
      args: (ports: number[]) => string[],
      probe: (ports: number[]) => () => Promise<boolean>,
      timeoutMs: number,
      beforeRetry?: () => Promise<void>,
    ): Promise<number[]> => {
      logs[name] = join(tempDir, 'logs', `${name}.log`);
      // Another process may take a probed port before the component binds it: retry on a fresh set.
      for (let attempt = 1; ; attempt++) {
        const ports = await Promise.all(Array.from({ length: portCount }, freeLoopbackPort));
        const component = startComponent(name, binary, args(ports), logs[name]);
        components.push(component);
        try {
          await waitUntilReady(component, probe(ports), timeoutMs);
          return ports;
        } catch (error) {
          const portTaken = error instanceof ComponentStartError && /address already in use/.test(error.log);
          if (!portTaken || attempt >= 3) throw error;
          await component.stop();
          components.splice(components.indexOf(component), 1);
          await beforeRetry?.();
        }
      }
    };

    const [etcdPort = 0] = await startOne(
      'etcd',
      etcdBinary,
      2,
      (ports) => etcdArgs(etcdDir, ports, etcdHelp),
      ([client]) =>
        async () =>
          (await getText(`http://127.0.0.1:${client}/health`)).includes('"health":"true"'),
      30_000,
      async () => {
        await rm(etcdDir, { recursive: true, force: true });
        await mkdir(etcdDir);
      },
    );

    let url = '';
    const adminToken = tokens.admin ?? '';
    await startOne(
      'kube-apiserver',
      bin('kube-apiserver'),
      1,
      ([port]) => {
        url = `https://127.0.0.1:${port}`;
        return apiserverArgs({
          port,
          etcdPort,
          pki,
          tempDir,
          tokenFile,
          auditPolicy,
          auditLogPath,
          apiserverHelp,
        }).concat(options.apiserverFlags ?? []);
      },
      () => async () => {
        const ready = await kubeRequest({ url, caPem, tokens, adminToken }, '/readyz');
        return ready.status === 200 && ready.body === 'ok';
      },
      90_000,
    );

    if (withControllerManager) {
      const kubeconfig = join(tempDir, 'kube-controller-manager.kubeconfig');
      await writeKubeconfig(
        { url, caPem, tokens: { [CONTROLLER_MANAGER_USER]: controllerManagerToken } },
        kubeconfig,
        CONTROLLER_MANAGER_USER,
      );
      await startOne(
        'kube-controller-manager',
        bin('kube-controller-manager'),
        1,
        ([port]) => controllerManagerArgs({ port, pki, tempDir, kubeconfig, controllerManagerHelp }),
        ([port]) =>
          async () =>
            (await getText(`https://127.0.0.1:${port}/healthz`, insecureAgent())) === 'ok',
        60_000,
      );
    }

    const version = await kubeRequest({ url, caPem, tokens, adminToken }, '/version');
    const connection: KubeConnection = {
      url,
      caPem,
      tokens,
      adminToken,
      auditLogPath,
      tempDir,
      kubeconfigPath: join(tempDir, 'admin.kubeconfig'),
      loopbackTls: {
        certPem: await readFile(pki.loopbackCert, 'utf8'),
        keyPem: await readFile(pki.loopbackKey, 'utf8'),
      },
      controllerManager: withControllerManager,
      serverVersion: (version.body as { gitVersion?: string }).gitVersion ?? 'unknown',
    };
    await writeKubeconfig(connection, connection.kubeconfigPath);
    return { ...kubeHandle(connection), connection, logs, startupMs: Date.now() - started, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

function normaliseUsers(users: ControlPlaneOptions['users']): StaticUser[] {
  const list = (users ?? DEFAULT_USERS).map((user) => (typeof user === 'string' ? { name: user } : user));
  for (const user of list) {
    if (!/^[\w:.@-]+$/.test(user.name) || user.name === 'admin')
      throw new Error(`bad user name ${user.name}`);
  }
  return list;
}

function tokenLine(token: string, user: StaticUser): string {
  const groups = user.groups?.length ? `,"${user.groups.join(',')}"` : '';
  return `${token},${user.name},${user.name}${groups}\n`;
}

/** Flags differ between releases; the help text tells which ones this binary has. */
async function helpText(binary: string): Promise<string> {
  try {
    const { stdout, stderr } = await run(binary, ['--help'], { maxBuffer: 16 * 1024 * 1024 });
    return stdout + stderr;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    return `${failed.stdout ?? ''}${failed.stderr ?? ''}`;
  }
}

const hasFlag = (help: string, flag: string) => new RegExp(`--${flag}\\b(?!-)`).test(help);

function etcdArgs(dataDir: string, [client, peer]: number[], help: string): string[] {
  const clientUrl = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  return [
    '--name=test',
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=test=${peerUrl}`,
    '--initial-cluster-state=new',
    '--logger=zap',
    '--log-outputs=stderr',
    ...(hasFlag(help, 'unsafe-no-fsync') ? ['--unsafe-no-fsync'] : []),
  ];
}

interface ApiserverArgs {
  port: number | undefined;
  etcdPort: number;
  pki: ControlPlanePki;
  tempDir: string;
  tokenFile: string;
  auditPolicy: string;
  auditLogPath: string;
  apiserverHelp: string;
}

function apiserverArgs(a: ApiserverArgs): string[] {
  return [
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${a.port}`,
    // Before 1.20 the insecure port defaults to 8080, which would collide between parallel runs.
    ...(hasFlag(a.apiserverHelp, 'insecure-port') ? ['--insecure-port=0'] : []),
    `--etcd-servers=http://127.0.0.1:${a.etcdPort}`,
    `--cert-dir=${join(a.tempDir, 'apiserver-certs')}`,
    `--tls-cert-file=${a.pki.apiserverCert}`,
    `--tls-private-key-file=${a.pki.apiserverKey}`,
    `--client-ca-file=${a.pki.caCert}`,
    `--token-auth-file=${a.tokenFile}`,
    '--authorization-mode=RBAC',
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    `--service-account-issuer=${SA_ISSUER}`,
    `--service-account-signing-key-file=${a.pki.serviceAccountKey}`,
    `--service-account-key-file=${a.pki.serviceAccountPub}`,
    // Loopback IPs are not valid Endpoints, so the `kubernetes` Service cannot be reconciled.
    '--endpoint-reconciler-type=none',
    `--requestheader-client-ca-file=${a.pki.frontProxyCaCert}`,
    '--requestheader-allowed-names=front-proxy-client',
    '--requestheader-username-headers=X-Remote-User',
    '--requestheader-group-headers=X-Remote-Group',
    '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${a.pki.frontProxyClientCert}`,
    `--proxy-client-key-file=${a.pki.frontProxyClientKey}`,
    `--audit-policy-file=${a.auditPolicy}`,
    `--audit-log-path=${a.auditLogPath}`,
    '--audit-log-format=json',
    '--allow-privileged=true',
    '--profiling=false',
    '--v=1',
  ];
}

interface ControllerManagerArgs {
  port: number | undefined;
  pki: ControlPlanePki;
  tempDir: string;
  kubeconfig: string;
  controllerManagerHelp: string;
}

function controllerManagerArgs(a: ControllerManagerArgs): string[] {
  const known = knownControllers(a.controllerManagerHelp);
  const disabled = CLOUD_CONTROLLERS.filter((name) => known.has(name)).map((name) => `-${name}`);
  return [
    `--kubeconfig=${a.kubeconfig}`,
    `--authentication-kubeconfig=${a.kubeconfig}`,
    `--authorization-kubeconfig=${a.kubeconfig}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${a.port}`,
    // Releases before 1.24 also serve plain HTTP on 10252 unless told not to.
    ...(hasFlag(a.controllerManagerHelp, 'port') ? ['--port=0'] : []),
    `--cert-dir=${join(a.tempDir, 'controller-manager-certs')}`,
    '--leader-elect=false',
    '--use-service-account-credentials=true',
    `--controllers=${['*', ...disabled].join(',')}`,
    `--service-account-private-key-file=${a.pki.serviceAccountKey}`,
    `--root-ca-file=${a.pki.caCert}`,
    `--cluster-signing-cert-file=${a.pki.caCert}`,
    `--cluster-signing-key-file=${a.pki.caKey}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--profiling=false',
    '--v=1',
  ];
}

/** The help text lists every controller as "All controllers: a, b, c." */
function knownControllers(help: string): Set<string> {
  const list = /All controllers:([\s\S]*?)(?:Disabled-by-default|\(default|\n\s*--)/.exec(help)?.[1] ?? '';
  return new Set(list.split(/[\s,.]+/).filter(Boolean));
}

let insecure: Agent | undefined;
/** The controller-manager serves /healthz with a self-signed cert it made itself. */
function insecureAgent(): Agent {
  insecure ??= new Agent({ connect: { rejectUnauthorized: false } });
  return insecure;
}

async function getText(url: string, dispatcher?: Agent): Promise<string> {
  const response = await request(url, { dispatcher });
  const text = await response.body.text();
  return response.statusCode === 200 ? text.trim() : '';
}
