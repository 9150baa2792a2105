/**
 * The real node for the end-to-end tests (test/e2e/): a single-node Kubernetes v1.20.2 cluster with a
 * real kubelet, containerd and runc in one network namespace, started and stopped through
 * shared/kube-node's scripts (its README describes the node). On top of what start.sh gives, the harness
 * adds what Pods of a Helm release need, as a real cluster has it:
 * - the kube-apiserver restarted with an audit log (Metadata level) and listening on the node's address,
 *   so Pods reach it through the `kubernetes` Service (its Endpoints point at 10.88.0.1:6443, since the
 *   control plane runs with --endpoint-reconciler-type=none);
 * - kube-proxy (iptables mode) for Service ClusterIPs, built from the same source tree (prepare.sh);
 * - cluster DNS: Debian's dnsmasq on the node's address, fed a hosts file of the cluster's Services
 *   (rewritten when they change), with the kubelet restarted with --cluster-dns/--cluster-domain;
 * - TCP bridges between the test process (host namespace) and the node's namespace, through a Unix
 *   socket each (the namespaces share the file system, not the network).
 * Root only; the caches come from prepare.sh.
 */

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { SETTINGS } from '../../../config/config.ts';
import { type OwnedProcess, ownProcess } from '../child-process.ts';

const exec = promisify(execFile);
const REPO = resolve(import.meta.dirname, '../../..');

export const NODE_GATEWAY = '10.88.0.1';
export const NODE_NETNS = 'kgnode';
export const NODE_NAME = 'kgnode';
export const NODE_IMAGE = 'localhost/kubeglue:dev';
const NETNS_PATH = `/run/netns/${NODE_NETNS}`;
const CLUSTER_DOMAIN = 'cluster.local';

export interface NodePaths {
  kubeHome: string;
  nodeHome: string;
  scripts: string;
  /** The image's /app tree and Node binary, as images.sh assembled them. */
  imageApp: string;
  imageNode: string;
}

/** Where the caches are (KUBEGLUE_KUBE_CACHE, KUBEGLUE_NODE_CACHE) and shared/kube-node's scripts. */
export function nodePaths(): NodePaths {
  const kubeHome = process.env[SETTINGS.tree.ci.kubeCache.name] ?? join(homedir(), '.cache', 'kubeglue-kube');
  const nodeHome = process.env[SETTINGS.tree.ci.nodeCache.name] ?? join(homedir(), '.cache', 'kube-node');
  const scripts =
    process.env.KUBE_NODE_SCRIPTS ??
    [join(REPO, '..', 'shared', 'kube-node'), '/work/shared/kube-node'].find((dir) =>
      existsSync(join(dir, 'start.sh')),
    ) ??
    '';
  return {
    kubeHome,
    nodeHome,
    scripts,
    imageApp: join(nodeHome, 'build', 'kubeglue-layer', 'app'),
    imageNode: join(nodeHome, 'build', 'node-layer', 'usr', 'local', 'bin', 'node'),
  };
}

/**
 * Why the real node cannot run here, or undefined when it can; `services`: with kube-proxy (Service
 * routing), which Helm releases need and processes in the namespace do not.
 */
export function realNodeMissing(options: { services?: boolean } = {}): string | undefined {
  if (process.getuid?.() !== 0) return 'the real node needs root';
  const paths = nodePaths();
  if (!paths.scripts) return 'shared/kube-node not found (KUBE_NODE_SCRIPTS)';
  const needed = [
    join(paths.kubeHome, 'bin', 'kube-apiserver'),
    join(paths.nodeHome, 'bin', 'kubelet'),
    ...(options.services === false ? [] : [join(paths.nodeHome, 'bin', 'kube-proxy')]),
    join(paths.nodeHome, 'images', 'kubeglue.oci.tar'),
    join(paths.imageApp, 'dist', 'bin', 'kubeglue.js'),
  ];
  const absent = needed.filter((file) => !existsSync(file));
  if (absent.length > 0) return `run test/support/kube-node/prepare.sh first (missing: ${absent.join(', ')})`;
  for (const command of ['/usr/sbin/dnsmasq', '/usr/bin/socat', '/usr/bin/nsenter']) {
    if (!existsSync(command)) return `${command} missing (prepare.sh installs it)`;
  }
  return undefined;
}

/** A process started inside the node's network namespace. */
export type NsProcess = OwnedProcess;

export interface RealNode {
  paths: NodePaths;
  /** The admin kubeconfig (server https://127.0.0.1:6443 inside the namespace). */
  kubeconfig: string;
  /** kubectl inside the namespace; stdout. */
  kubectl(args: string[], options?: { input?: string; timeoutMs?: number }): Promise<string>;
  /** `kubectl get -o json`, parsed; undefined when not found. */
  get<T>(args: string[]): Promise<T | undefined>;
  /** A process inside the node's network namespace (only the network namespace is entered). */
  spawnInside(command: string, args: string[], env?: Record<string, string>): NsProcess;
  /** A port on the node's address (10.88.0.1) forwarded to 127.0.0.1:hostPort in the test's namespace. */
  expose(hostPort: number): Promise<number>;
  /** A port on the test's loopback forwarded to host:port inside the node's namespace. */
  reach(port: number, host?: string): Promise<number>;
  /** Stops the kubelet (the node is lost until startKubelet). */
  stopKubelet(): Promise<void>;
  startKubelet(): Promise<void>;
  /** Restarts containerd (containers keep running in their shims). */
  restartContainerd(): Promise<void>;
  /** The apiserver's audit events (one JSON object a line). */
  auditEvents(): Promise<AuditRecord[]>;
  /** Stops everything (stop.sh), also what the harness started. */
  stop(): Promise<void>;
}

export interface AuditRecord {
  user: { username: string };
  verb: string;
  objectRef?: { resource?: string; subresource?: string; apiGroup?: string; namespace?: string };
  responseStatus?: { code?: number };
  requestURI: string;
}

function nodeEnv(paths: NodePaths): NodeJS.ProcessEnv {
  return { ...process.env, KUBE_HOME: paths.kubeHome, NODE_HOME: paths.nodeHome };
}

async function script(paths: NodePaths, name: string, timeoutMs = 300_000): Promise<string> {
  try {
    const { stdout } = await exec('bash', [join(paths.scripts, name)], {
      env: nodeEnv(paths),
      timeout: timeoutMs,
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const failed = error as Error & { stdout?: string; stderr?: string };
    throw new Error(`${name} failed: ${failed.message}\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`);
  }
}

function pidFile(paths: NodePaths, name: string): string {
  return join(paths.nodeHome, 'run', `${name}.pid`);
}

async function commandLine(pid: number): Promise<string[]> {
  const raw = await readFile(`/proc/${pid}/cmdline`, 'utf8');
  return raw.split('\0').filter(Boolean);
}

async function waitGone(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (existsSync(`/proc/${pid}/cmdline`) && Date.now() < deadline) await sleep(200);
  if (existsSync(`/proc/${pid}/cmdline`)) {
    process.kill(pid, 'SIGKILL');
    await sleep(500);
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A detached process in the namespace that outlives nothing: its pid goes in $NODE_HOME/run/<name>.pid
 * (stop.sh stops every such process whose command line names NODE_HOME).
 */
function startComponent(paths: NodePaths, name: string, argv: string[]): number {
  const log = join(paths.nodeHome, 'logs', `${name}.log`);
  const child = spawn(
    'sh',
    ['-c', `exec nsenter --net=${NETNS_PATH} -- "$@" >>"${log}" 2>&1`, 'sh', ...argv],
    {
      detached: true,
      stdio: 'ignore',
    },
  );
  child.unref();
  return child.pid as number;
}

async function restartWith(
  paths: NodePaths,
  name: string,
  change: (argv: string[]) => string[],
): Promise<void> {
  const pid = Number((await readFile(pidFile(paths, name), 'utf8')).trim());
  const argv = await commandLine(pid);
  process.kill(pid, 'SIGTERM');
  await waitGone(pid, 20_000);
  const started = startComponent(paths, name, change(argv));
  await writeFile(pidFile(paths, name), `${started}\n`);
}

function withFlags(argv: string[], flags: Record<string, string>): string[] {
  const kept = argv.filter((arg) => !Object.keys(flags).some((flag) => arg.startsWith(`${flag}=`)));
  return [...kept, ...Object.entries(flags).map(([flag, value]) => `${flag}=${value}`)];
}

async function waitUntilTrue(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`real node: timed out waiting for ${what}`);
    await sleep(500);
  }
}

/**
 * One node per machine: test files that use it (vitest runs files in parallel) take turns through a
 * lock file holding the owner's pid; a lock whose process is gone is taken over.
 */
async function lockNode(paths: NodePaths): Promise<() => Promise<void>> {
  const lock = join(paths.nodeHome, 'harness.lock');
  for (;;) {
    try {
      await writeFile(lock, `${process.pid}\n`, { flag: 'wx' });
      return () => rm(lock, { force: true });
    } catch {
      const owner = Number((await readFile(lock, 'utf8').catch(() => '')).trim());
      if (!(owner > 0) || !existsSync(`/proc/${owner}`)) await rm(lock, { force: true });
      else await sleep(1000);
    }
  }
}

/** Starts the node (stop.sh first, for anything an earlier run left) and the harness's additions. */
export async function startRealNode(options: { services?: boolean } = {}): Promise<RealNode> {
  const services = options.services !== false;
  const paths = nodePaths();
  const missing = realNodeMissing(options);
  if (missing) throw new Error(missing);
  const unlock = await lockNode(paths);
  const kubeconfig = join(paths.kubeHome, 'kubeconfig');
  const harness = join(paths.nodeHome, 'harness');
  const bridges = join(harness, 'bridges');
  const hostsDir = join(harness, 'dns-hosts');
  try {
    await script(paths, 'stop.sh', 120_000);
  } catch (error) {
    await unlock();
    throw error;
  }
  await rm(harness, { recursive: true, force: true });
  await mkdir(bridges, { recursive: true });
  await mkdir(hostsDir, { recursive: true });
  const owned: ChildProcess[] = [];
  let dnsTimer: NodeJS.Timeout | undefined;

  const ns = (command: string, args: string[]) =>
    ['nsenter', [`--net=${NETNS_PATH}`, '--', command, ...args]] as const;
  const kubectl: RealNode['kubectl'] = async (args, options = {}) => {
    const [command, argv] = ns('kubectl', ['--kubeconfig', kubeconfig, ...args]);
    return new Promise((resolvePromise, reject) => {
      const child = execFile(
        command,
        argv,
        { timeout: options.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) => {
          if (error) reject(new Error(`kubectl ${args.join(' ')}: ${stderr || error.message}`));
          else resolvePromise(stdout);
        },
      );
      if (options.input !== undefined) child.stdin?.end(options.input);
    });
  };
  const get = async <T>(args: string[]): Promise<T | undefined> => {
    try {
      return JSON.parse(await kubectl(['get', ...args, '-o', 'json'])) as T;
    } catch (error) {
      if (/NotFound|not found/.test((error as Error).message)) return undefined;
      throw error;
    }
  };
  const spawnInside: RealNode['spawnInside'] = (command, args, env = {}) => {
    const [nsenter, argv] = ns(command, args);
    const child = spawn(nsenter, argv, {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    owned.push(child);
    return ownProcess(child);
  };
  let bridgeCount = 0;
  const socat = (inside: boolean, args: string[]) => {
    const child = inside
      ? spawn('nsenter', [`--net=${NETNS_PATH}`, '--', 'socat', ...args], { stdio: 'ignore' })
      : spawn('socat', args, { stdio: 'ignore' });
    owned.push(child);
    process.once('exit', () => child.kill('SIGKILL'));
  };
  // Below the ephemeral range; nothing else listens on the node's address but the harness's bridges.
  let nextInsidePort = 20_000 + Math.floor(Math.random() * 10_000);
  const freePortInside = async (): Promise<number> => nextInsidePort++;
  const listening = async (socket: string) =>
    waitUntilTrue(`bridge ${socket}`, async () => existsSync(socket), 10_000);
  const expose: RealNode['expose'] = async (hostPort) => {
    const socket = join(bridges, `expose-${++bridgeCount}.sock`);
    socat(false, [`UNIX-LISTEN:${socket},fork,mode=600`, `TCP:127.0.0.1:${hostPort}`]);
    await listening(socket);
    const port = await freePortInside();
    socat(true, [`TCP-LISTEN:${port},bind=${NODE_GATEWAY},fork,reuseaddr`, `UNIX-CONNECT:${socket}`]);
    await waitUntilTrue(
      `port ${port} on ${NODE_GATEWAY}`,
      async () => {
        const [command, argv] = ns('/bin/sh', ['-c', `ss -ltn | grep -q '${NODE_GATEWAY}:${port} '`]);
        await exec(command, [...argv]);
        return true;
      },
      10_000,
    );
    return port;
  };
  const reach: RealNode['reach'] = async (port, host = NODE_GATEWAY) => {
    const socket = join(bridges, `reach-${++bridgeCount}.sock`);
    socat(true, [`UNIX-LISTEN:${socket},fork,mode=600`, `TCP:${host}:${port}`]);
    await listening(socket);
    const { freeLoopbackPort } = await import('../os.ts');
    const hostPort = await freeLoopbackPort();
    socat(false, [`TCP-LISTEN:${hostPort},bind=127.0.0.1,fork,reuseaddr`, `UNIX-CONNECT:${socket}`]);
    await waitUntilTrue(
      `127.0.0.1:${hostPort}`,
      async () => {
        const { stdout } = await exec('ss', ['-ltn']);
        return stdout.includes(`127.0.0.1:${hostPort} `);
      },
      10_000,
    );
    return hostPort;
  };

  const stop = async () => {
    if (dnsTimer) clearInterval(dnsTimer);
    for (const child of owned) child.kill('SIGKILL');
    // stop.sh knows the components start.sh started; these two are the harness's.
    for (const name of ['kube-proxy', 'dnsmasq']) {
      const pid = Number((await readFile(pidFile(paths, name), 'utf8').catch(() => '')).trim());
      if (pid > 0 && (await commandLine(pid).catch(() => [])).join(' ').includes(paths.nodeHome)) {
        process.kill(pid, 'SIGKILL');
      }
      await rm(pidFile(paths, name), { force: true });
    }
    try {
      await script(paths, 'stop.sh', 180_000);
    } finally {
      await unlock();
    }
  };

  try {
    await script(paths, 'start.sh', 300_000);

    // The apiserver: on the node's address too (Pods reach it through the kubernetes Service), with an
    // audit log of every request at Metadata level (the chart's RBAC test reads it).
    const policy = join(harness, 'audit-policy.yaml');
    await writeFile(
      policy,
      'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: ["RequestReceived"]\nrules:\n  - level: Metadata\n',
    );
    await restartWith(paths, 'kube-apiserver', (argv) =>
      withFlags(argv, {
        '--bind-address': '0.0.0.0',
        '--advertise-address': NODE_GATEWAY,
        '--audit-policy-file': policy,
        '--audit-log-path': join(harness, 'audit.log'),
        '--audit-log-maxsize': '200',
      }),
    );
    await waitUntilTrue(
      'kube-apiserver /readyz',
      async () => (await kubectl(['get', '--raw', '/readyz'])).trim() === 'ok',
      120_000,
    );
    await kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: { name: 'kubernetes', namespace: 'default' },
        subsets: [
          { addresses: [{ ip: NODE_GATEWAY }], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] },
        ],
      }),
    });

    // kube-proxy: Service ClusterIPs. --masquerade-all: replies from a Pod behind a Service on the same
    // bridge go back through the node, where conntrack undoes the translation.
    if (services) {
      // Connections made in the node's namespace itself (the test's bridge to a Service) are routed
      // before kube-proxy's OUTPUT rules translate them: the Service range needs a route, on the bridge
      // (the namespace still has no default route and no way out).
      await exec('ip', ['-n', NODE_NETNS, 'route', 'replace', '10.0.0.0/24', 'dev', 'kn0']);
      await startKubeProxy();
    }
    async function startKubeProxy() {
      const proxyPid = startComponent(paths, 'kube-proxy', [
        join(paths.nodeHome, 'bin', 'kube-proxy'),
        `--kubeconfig=${kubeconfig}`,
        '--proxy-mode=iptables',
        `--hostname-override=${NODE_NAME}`,
        '--cluster-cidr=10.88.0.0/16',
        '--masquerade-all',
        '--conntrack-max-per-core=0',
        '--conntrack-tcp-timeout-established=0',
        '--conntrack-tcp-timeout-close-wait=0',
        '--healthz-bind-address=127.0.0.1:10256',
        '--metrics-bind-address=127.0.0.1:10249',
        '--v=1',
      ]);
      await writeFile(pidFile(paths, 'kube-proxy'), `${proxyPid}\n`);
    }

    // Cluster DNS: dnsmasq on the node's address answers <service>.<namespace>.svc.cluster.local from a
    // hosts file of the Services; nothing else (no upstream: the namespace has no route out).
    const writeHosts = async () => {
      const list = await get<{
        items: { metadata: { name: string; namespace: string }; spec: { clusterIP?: string } }[];
      }>(['services', '-A']);
      const lines = (list?.items ?? [])
        .filter((svc) => svc.spec.clusterIP && svc.spec.clusterIP !== 'None')
        .map((svc) => {
          const fqdn = `${svc.metadata.name}.${svc.metadata.namespace}.svc.${CLUSTER_DOMAIN}`;
          return `${svc.spec.clusterIP} ${fqdn}`;
        })
        .sort()
        .join('\n');
      const file = join(hostsDir, 'services');
      const current = await readFile(file, 'utf8').catch(() => '');
      if (current !== `${lines}\n`) {
        // Written beside the directory and renamed in: dnsmasq reads every file that appears there.
        const staged = join(harness, 'services.staged');
        await writeFile(staged, `${lines}\n`);
        await rename(staged, file);
      }
    };
    await writeHosts();
    const dnsPid = startComponent(paths, 'dnsmasq', [
      '/usr/sbin/dnsmasq',
      '--keep-in-foreground',
      '--no-resolv',
      '--no-hosts',
      '--no-poll',
      `--listen-address=${NODE_GATEWAY}`,
      '--bind-interfaces',
      `--hostsdir=${hostsDir}`,
      `--local=/${CLUSTER_DOMAIN}/`,
      '--user=root',
      '--pid-file=',
      '--log-facility=-',
    ]);
    await writeFile(pidFile(paths, 'dnsmasq'), `${dnsPid}\n`);
    await waitUntilTrue(
      'dnsmasq on port 53',
      async () => {
        const [command, argv] = ns('ss', ['-lun']);
        return (await exec(command, [...argv])).stdout.includes(`${NODE_GATEWAY}:53 `);
      },
      10_000,
    );
    dnsTimer = setInterval(() => void writeHosts().catch(() => {}), 1000);
    dnsTimer.unref();

    // The kubelet again, with the cluster DNS in every Pod's resolv.conf.
    await restartWith(paths, 'kubelet', (argv) =>
      withFlags(argv, { '--cluster-dns': NODE_GATEWAY, '--cluster-domain': CLUSTER_DOMAIN }),
    );
    await waitUntilTrue(
      'node Ready after the kubelet restart',
      async () =>
        (await kubectl([
          'get',
          'node',
          NODE_NAME,
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
        ])) === 'True',
      120_000,
    );
    if (services)
      await waitUntilTrue(
        'kube-proxy rules',
        async () => {
          const [command, argv] = ns('iptables-save', ['-t', 'nat']);
          return (await exec(command, [...argv])).stdout.includes('KUBE-SVC-');
        },
        60_000,
      );
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }

  return {
    paths,
    kubeconfig,
    kubectl,
    get,
    spawnInside,
    expose,
    reach,
    stopKubelet: async () => {
      const pid = Number((await readFile(pidFile(paths, 'kubelet'), 'utf8')).trim());
      const argv = await commandLine(pid);
      await writeFile(join(harness, 'kubelet.argv'), JSON.stringify(argv));
      process.kill(pid, 'SIGKILL');
      await waitGone(pid, 10_000);
    },
    startKubelet: async () => {
      const argv = JSON.parse(await readFile(join(harness, 'kubelet.argv'), 'utf8')) as string[];
      const pid = startComponent(paths, 'kubelet', argv);
      await writeFile(pidFile(paths, 'kubelet'), `${pid}\n`);
    },
    restartContainerd: () => restartWith(paths, 'containerd', (argv) => argv),
    auditEvents: async () =>
      (await readFile(join(harness, 'audit.log'), 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as AuditRecord),
    stop,
  };
}
