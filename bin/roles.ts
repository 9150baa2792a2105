/**
 * The roles of `kubeglue <role>`: what each runs, how it is called, and its module, loaded only when the
 * role starts.
 */
import { type Role, SETTINGS } from '../config/config.ts';

export interface RoleSpec {
  name: Role;
  /** One line for `kubeglue --help`. */
  summary: string;
  usage: string;
  about: readonly string[];
  /** Whether the role reads arguments of its own (the others refuse any, as settings are variables). */
  takesArguments: boolean;
  load(): Promise<{ main(args: string[]): Promise<void> }>;
}

export const ROLES: readonly RoleSpec[] = [
  {
    name: 'embedded',
    summary: 'the API and the operator in one process on the embedded store (what `npm start` runs)',
    usage: 'kubeglue embedded',
    about: [
      'The /v1 API, the operator loops and the engine workers in one process, on the embedded SQLite store in',
      `${SETTINGS.tree.dataDir.name} (or Postgres with ${SETTINGS.tree.databaseUrl.name}): a laptop or CI needs no cluster`,
      '(docs/embedded.md). SIGINT/SIGTERM stop it gracefully.',
    ],
    takesArguments: false,
    load: () => import('./embedded-main.ts'),
  },
  {
    name: 'api',
    summary: 'the /v1 API and the internal runner port on Kubernetes (Postgres store)',
    usage: 'kubeglue api',
    about: [
      'The /v1 API on Kubernetes: Tools and Systems are resources, runs live in Postgres, sync runs execute',
      "in this process's worker pool, runner Pods call the internal port (docs/kubernetes.md).",
    ],
    takesArguments: false,
    load: () => import('../api/main.ts'),
  },
  {
    name: 'operator',
    summary: 'the reconcilers, runner Pods and outbox delivery on Kubernetes (leader-elected)',
    usage: 'kubeglue operator',
    about: [
      'The Tool, System and ToolRun reconcilers, runner Pods, outbox delivery and retention on Kubernetes;',
      'replicas elect one leader through a Lease (docs/kubernetes.md).',
    ],
    takesArguments: false,
    load: () => import('../operator/main.ts'),
  },
  {
    name: 'runner',
    summary: 'executes one run (the runner Pod, or a run order from a file)',
    usage: 'kubeglue runner [--order <order.json>] [--out <result.json>]',
    about: [
      `Executes one run. In a runner Pod (${SETTINGS.tree.runId.name} set by the operator) it fetches its order from the`,
      'internal API; otherwise it reads a run order from --order (or stdin) and writes the result to --out',
      '(or stdout). Exit code: 0 success, 2 failed or aborted, 1 could not run at all.',
    ],
    takesArguments: true,
    load: () => import('../runner/main.ts'),
  },
  {
    name: 'agent',
    summary: 'the gateway agent in a private network: `agent -config <path> [-debug]`',
    usage: 'kubeglue agent -config <path> [-debug]',
    about: [
      'The gateway agent: holds a tunnel to the kubeglue API from a private network and relays the requests',
      'of runs to the targets its configuration file names (docs/gateway.md). Exits 2 on a bad configuration.',
    ],
    takesArguments: true,
    load: () => import('../agent/main.ts'),
  },
];

export function findRole(name: string): RoleSpec | undefined {
  return ROLES.find((role) => role.name === name);
}
