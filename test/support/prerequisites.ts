/**
 * The parts of the machine some suites need and cannot start themselves, in one table: each with the
 * test files that skip without it and a probe that says why it cannot be used here. The suites skip by
 * it (or fail under CI=true, where a suite must not pass by not running), and the run's report
 * (skip-report.ts) prints the missing ones before the run and again in the summary, so a skip is never
 * silent. `npm test` (bin/test, test/setup.sh) installs every one of them on a machine of ours.
 *
 * A new part (a server the tests run, a tool they call) is one more entry here and, when Debian has it,
 * one more line in test/setup.sh's package list.
 *
 * Imported by the test files and by the reporter in vitest's main process: no vitest API here.
 */

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { SETTINGS } from '../../config/config.ts';
import { realNodeMissing } from './kube-node/node.ts';

/** The test harness's own settings (config/development.ts). */
const { ci } = SETTINGS.tree;

export interface Prerequisite {
  /** The suites that need it, as the report names them. */
  suites: string;
  /** How a test file says it needs it (the guard it calls): the report finds the files by it. */
  uses: RegExp;
  /** Why it cannot be used here, or undefined when it can. */
  missing(): string | undefined;
}

/** The executable `name` on PATH, or undefined. */
export function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** Where test/setup.sh builds the control plane (KUBEGLUE_KUBE_CACHE). */
export function kubeCache(): string {
  return process.env[ci.kubeCache.name] ?? join(homedir(), '.cache', 'kubeglue-kube');
}

/**
 * The directory with etcd and kube-apiserver (the envtest layout): KUBEBUILDER_ASSETS, else the control
 * plane test/setup.sh built into the cache, so `npx vitest run` finds it as `npm test` does.
 */
export function kubeAssets(): string | undefined {
  const given = process.env.KUBEBUILDER_ASSETS;
  if (given) return existsSync(join(given, 'kube-apiserver')) ? given : undefined;
  const cached = join(kubeCache(), 'bin');
  return existsSync(join(cached, 'kube-apiserver')) && existsSync(join(cached, 'etcd')) ? cached : undefined;
}

/** The Chromium to drive (never a downloaded one): KUBEGLUE_CHROMIUM, else CHROMIUM_PATH, else Debian's. */
export function chromiumPath(): string | undefined {
  const given = process.env[ci.chromium.name] || process.env.CHROMIUM_PATH;
  if (given) return given;
  return ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path));
}

/** Prometheus' promtool: on PATH, or where test/setup.sh extracts it (KUBEGLUE_PROMTOOL_CACHE). */
export function promtoolPath(): string | undefined {
  const cached = join(
    process.env[ci.promtoolCache.name] ?? join(homedir(), '.cache', 'kubeglue-promtool'),
    'bin',
    'promtool',
  );
  return onPath('promtool') ?? (existsSync(cached) ? cached : undefined);
}

/** The redis-server binary: REDIS_SERVER, else Debian's. */
export function redisServerPath(): string | undefined {
  const given = process.env.REDIS_SERVER;
  if (given) return given;
  return ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((path) => existsSync(path));
}

/** Debian's MariaDB server and its installer (test/support/mariadb.ts starts them). */
export const MARIADB = { server: '/usr/sbin/mariadbd', installDb: '/usr/bin/mariadb-install-db' };

/** Samba's smbd (KUBEGLUE_SMBD names another) and the tool that adds its users. */
export const SAMBA = {
  smbd: process.env[ci.smbd.name] ?? '/usr/sbin/smbd',
  smbpasswd: '/usr/bin/smbpasswd',
  smbstatus: '/usr/bin/smbstatus',
};

export const PREREQUISITES = {
  kube: {
    suites: 'the Kubernetes tests',
    uses: /\b(describeKube|useKubeTestBed|requireKube|providedKube)\b/,
    missing: () =>
      kubeAssets()
        ? undefined
        : process.env.KUBEBUILDER_ASSETS
          ? `KUBEBUILDER_ASSETS=${process.env.KUBEBUILDER_ASSETS} has no kube-apiserver`
          : `no control plane: KUBEBUILDER_ASSETS is unset and ${join(kubeCache(), 'bin')} has no kube-apiserver and etcd; npm test builds them (as root, from ../shared/kube)`,
  },
  realNode: {
    suites: 'the real-node suites',
    uses: /\bdescribeRealNode\(/,
    missing: () => realNodeMissing(),
  },
  chromium: {
    suites: "the dashboard's browser tests",
    uses: /\bbrowserMissing\(/,
    missing: () =>
      chromiumPath()
        ? undefined
        : `no Chromium (${ci.chromium.name}, CHROMIUM_PATH or /usr/bin/chromium); npm test installs Debian's chromium`,
  },
  promtool: {
    suites: "the chart's alert tests",
    uses: /\bPROMTOOL\b/,
    missing: () =>
      promtoolPath()
        ? undefined
        : "no promtool on PATH or in the cache; npm test extracts it from Debian's prometheus package",
  },
  kubectl: {
    suites: "kubectl's check of the generated CRDs",
    uses: /skipReason\('kubectl'\)/,
    missing: () =>
      onPath('kubectl') ? undefined : "no kubectl on PATH; npm test installs Debian's kubernetes-client",
  },
  redis: {
    suites: 'the Redis protocol tests',
    uses: /\bredisServerMissing\(/,
    missing: () =>
      redisServerPath()
        ? undefined
        : "no redis-server: npm test installs Debian's redis-server (or set REDIS_SERVER to one)",
  },
  mariadb: {
    suites: 'the MySQL/MariaDB protocol tests',
    uses: /\b(mariadbSkip|useMariaDb|providedMariaDb)\(/,
    missing: () =>
      existsSync(MARIADB.server) && existsSync(MARIADB.installDb)
        ? undefined
        : `no MariaDB server at ${MARIADB.server}: npm test installs Debian's mariadb-server`,
  },
  samba: {
    suites: 'the SMB protocol tests',
    uses: /\bsambaMissing\(/,
    missing: () => {
      if (!existsSync(SAMBA.smbd) || !existsSync(SAMBA.smbpasswd)) {
        return `no Samba at ${SAMBA.smbd}: npm test installs Debian's samba (or set ${ci.smbd.name} to smbd)`;
      }
      return process.getuid?.() === 0 ? undefined : 'smbd must run as root to act as the logged-on user';
    },
  },
  script: {
    suites: "the CLI's terminal test",
    uses: /spawnSync\('script'/,
    missing: () =>
      spawnSync('script', ['--version']).status === 0 ? undefined : 'no util-linux `script` on PATH',
  },
} satisfies Record<string, Prerequisite>;

export type PrerequisiteName = keyof typeof PREREQUISITES;

/**
 * Why the suites needing `name` skip here, or undefined when they run. Under CI=true a missing part
 * throws instead: there every suite must run.
 */
export function skipReason(name: PrerequisiteName): string | undefined {
  const reason = PREREQUISITES[name].missing();
  if (reason && process.env.CI === 'true') {
    throw new Error(`${PREREQUISITES[name].suites} must run under CI=true: ${reason}`);
  }
  return reason;
}

/** Whether a test file, by its source, is one of the prerequisite's. */
export function usedBy(prerequisite: Prerequisite, source: string): boolean {
  return prerequisite.uses.test(source);
}
