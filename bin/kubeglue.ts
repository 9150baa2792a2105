#!/usr/bin/env -S node --no-node-snapshot
/**
 * bin/: the CLI that starts a role (or talks to an API); the embedded deployment wires api and operator in
 * one process.
 *
 * May import: every folder.
 *
 * `kubeglue <role> [options]`: one program, one role per process. The role's module is loaded only
 * when chosen, so a runner Pod never loads the API server and the reverse. Before the role starts, every
 * KUBEGLUE_* variable no setting declares is reported (config/config.ts, unknownSettings).
 */
import { unknownSettings } from '../config/config.ts';

const ROLES: Record<
  string,
  { describe: string; load: () => Promise<{ main(args: string[]): Promise<void> }> }
> = {
  embedded: {
    describe: 'the API and the operator in one process on the embedded store (what `npm start` runs)',
    load: () => import('./embedded-main.ts'),
  },
  api: {
    describe: 'the /v1 API and the internal runner port on Kubernetes (Postgres store)',
    load: () => import('../api/main.ts'),
  },
  operator: {
    describe: 'the reconcilers, runner Pods and outbox delivery on Kubernetes (leader-elected)',
    load: () => import('../operator/main.ts'),
  },
  runner: {
    describe: 'executes one run (the runner Pod, or a run order from a file)',
    load: () => import('../runner/main.ts'),
  },
  agent: {
    describe: 'the gateway agent in a private network: `agent -config <path> [-debug]`',
    load: () => import('../agent/main.ts'),
  },
};

function usage(): string {
  const lines = Object.entries(ROLES).map(([name, role]) => `  ${name.padEnd(10)} ${role.describe}`);
  return `usage: kubeglue <role> [options]\n\nroles:\n${lines.join('\n')}\n`;
}

const [role, ...args] = process.argv.slice(2);
const chosen = role ? ROLES[role] : undefined;
if (!chosen) {
  process.stderr.write(
    role && role !== '--help' && role !== '-h' ? `kubeglue: unknown role '${role}'\n\n` : '',
  );
  process.stderr.write(usage());
  process.exitCode = role === '--help' || role === '-h' ? 0 : 2;
} else {
  for (const warning of unknownSettings()) console.error(`kubeglue ${role}: warning: ${warning}`);
  chosen
    .load()
    .then((module) => module.main(args))
    .catch((error: unknown) => {
      console.error(`kubeglue ${role}: ${(error as Error).message}`);
      process.exit(1);
    });
}
