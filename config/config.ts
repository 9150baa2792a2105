/**
 * config/: the one settings registry. Every environment variable kubeglue reads is declared once, with its
 * type, default, the roles that read it and one line of documentation (setting.ts; one file per section
 * of docs/configuration.md, which config/generate.ts writes from here). A role selects its settings with
 * `loadSettings(role)` and hands the values on: no other folder reads the environment.
 *
 * May import: contract.
 */
import { CLI } from './cli.ts';
import { CLUSTER } from './cluster.ts';
import { DEVELOPMENT } from './development.ts';
import { DOCUMENTATION } from './documentation.ts';
import { ENGINE } from './engine.ts';
import { GATEWAY } from './gateway.ts';
import { IDENTITY } from './identity.ts';
import { OPERATOR } from './operator.ts';
import { RUNNER } from './runner.ts';
import { RUNS } from './runs.ts';
import { SCHEDULES } from './schedules.ts';
import { SERVER } from './server.ts';
import {
  type Environment,
  parseSettings,
  type Role,
  registry,
  type Select,
  type Setting,
  settingsIn,
  unknownVariables,
} from './setting.ts';
import { TOOL_STATE } from './tool-state.ts';
import { TRACES } from './traces.ts';

export { cliApiUrl, cliConfigPath, DEFAULT_CLI_URL } from './cli.ts';
export { ROLES, type Role, Setting, settingText } from './setting.ts';

/** Every setting, in the order of docs/configuration.md. */
export const SETTINGS = registry(
  SERVER,
  ENGINE,
  CLUSTER,
  OPERATOR,
  RUNS,
  RUNNER,
  GATEWAY,
  DOCUMENTATION,
  CLI,
  DEVELOPMENT,
  TOOL_STATE,
  SCHEDULES,
  IDENTITY,
  TRACES,
);

/** What role R reads, parsed: the registry's nesting, only R's settings. */
export type Settings<R extends Role> = Select<typeof SETTINGS.tree, R>;
export type EmbeddedSettings = Settings<'embedded'>;
export type ApiSettings = Settings<'api'>;
/** The operator's default internal URL makes it always set (a runner Pod, which has none, requires it). */
export type OperatorSettings = Omit<Settings<'operator'>, 'internalUrl'> & { internalUrl: string };
export type RunnerSettings = Settings<'runner'>;
/** What the processes that export runs' spans read (config/traces.ts). */
export type TraceSettings = Settings<'api'>['traces'];

const ENGINE_FIELDS = [
  'sandboxMemoryMb',
  'sandboxTimeoutMs',
  'sandboxKeyConcurrency',
  'maxStepDataBytes',
  'maxResultBytes',
  'maxRecordingBytes',
  'egress',
] as const;
/** What the engine of a role runs with: handed to its worker pool or runner (engine/deps.ts). */
export type EngineSettings = Pick<Settings<'runner'>, (typeof ENGINE_FIELDS)[number]>;
/** What a role's worker pool runs with (engine/worker/pool.ts). */
export type PoolSettings = EngineSettings & Pick<Settings<'api'>, 'workers' | 'workerIdleMs' | 'idleWorkers'>;
export type DocumentationLimits = Settings<'api'>['documentation'];

const { tree } = SETTINGS;

/** The settings `role` reads, by section of docs/configuration.md: what `kubeglue <role> --help` lists. */
export function settingsOfRole(role: Role): Array<{ title: string; settings: Setting[] }> {
  return SETTINGS.sections
    .map((part) => ({
      title: part.title,
      settings: settingsIn(part.settings).filter((one) => one.roles.includes(role)),
    }))
    .filter((part) => part.settings.length > 0);
}

/** Rules between settings, for the roles that read both. */
function crossProblems(values: {
  tls?: { certFile?: string; keyFile?: string };
  lease?: Settings<'operator'>['lease'];
}): string[] {
  const problems: string[] = [];
  const { tls, lease } = values;
  if (tls && Boolean(tls.certFile) !== Boolean(tls.keyFile)) {
    problems.push(`${tree.tls.certFile.name} and ${tree.tls.keyFile.name} go together (set both or neither)`);
  }
  if (lease && lease.renewDeadlineMs >= lease.durationMs) {
    problems.push(`${tree.lease.renewDeadlineMs.name} must be shorter than ${tree.lease.durationMs.name}`);
  }
  return problems;
}

/** How a role's start fails on a bad value: the runner speaks of its (Pod's) environment. */
function problemPrefix(role: Role): string {
  return role === 'runner' ? 'invalid runner environment' : 'invalid configuration';
}

/**
 * The settings `role` reads from `env`. Throws naming every invalid variable (never its value: some are
 * secrets), so a role fails at start rather than at first use.
 */
export function loadSettings<R extends Role>(role: R, env: Environment = process.env): Settings<R> {
  const prefix = problemPrefix(role);
  const values = parseSettings(SETTINGS, role, env, prefix);
  const problems = crossProblems(values);
  if (problems.length > 0) throw new Error(`${prefix}: ${problems.join('; ')}`);
  return values;
}

/** The operator's settings with the internal URL its default always sets. */
export function operatorSettings(settings: Settings<'operator'>): OperatorSettings {
  const { internalUrl } = settings;
  if (internalUrl === undefined) throw new Error(`${tree.internalUrl.name} has no default for the operator`);
  return { ...settings, internalUrl };
}

export function loadOperatorSettings(env: Environment = process.env): OperatorSettings {
  return operatorSettings(loadSettings('operator', env));
}

const defaults = new Map<Role, unknown>();

/** What `role` runs with when no variable is set: for parts built in code (tests, the embedded loops). */
export function defaultSettings<R extends Role>(role: R): Settings<R> {
  if (!defaults.has(role)) defaults.set(role, loadSettings(role, {}));
  return structuredClone(defaults.get(role)) as Settings<R>;
}

/** The operator's settings as it runs without any variable set, with `overrides`. */
export function defaultOperatorSettings(overrides: Partial<OperatorSettings> = {}): OperatorSettings {
  return { ...operatorSettings(defaultSettings('operator')), ...overrides };
}

/** The engine's settings among a role's. */
export function engineSettings(settings: EngineSettings): EngineSettings {
  return Object.fromEntries(ENGINE_FIELDS.map((field) => [field, settings[field]])) as EngineSettings;
}

/** The worker pool's settings among a role's. */
export function poolSettings(settings: PoolSettings): PoolSettings {
  return {
    ...engineSettings(settings),
    workers: settings.workers,
    workerIdleMs: settings.workerIdleMs,
    idleWorkers: settings.idleWorkers,
  };
}

/** The engine's settings of the embedded deployment without any variable set: for engines built in code. */
export function defaultEngineSettings(): EngineSettings {
  return engineSettings(defaultSettings('embedded'));
}

/** The pool's settings of the embedded deployment without any variable set: for pools built in code. */
export function defaultPoolSettings(): PoolSettings {
  return poolSettings(defaultSettings('embedded'));
}

/**
 * A warning for each KUBEGLUE_* variable of `env` no setting declares, naming the closest one: a typo
 * must not pass silently. A variable of another role is not reported: one environment (a .env file, a
 * ConfigMap) often serves several roles.
 */
export function unknownSettings(env: Environment = process.env): string[] {
  return unknownVariables(SETTINGS, env);
}
