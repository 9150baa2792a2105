/**
 * Persistent tool state (docs/state.md): a JSON object per tool that survives between runs, kept in the
 * store (never in a resource). What a run reads (stateForRun), how a finished run's changes are committed
 * (commitRunState: only for a run that succeeded, in the transaction of its terminal write, key by key with
 * compare-and-set against other runs, within the limits), and the state as `/v1/tools/{id}/state` shows
 * and replaces it (ToolStateService).
 */
import { isDeepStrictEqual } from 'node:util';
import { defaultSettings, SETTINGS, type Settings } from '../config/config.ts';
import {
  KG_ERR_TOOL_NOT_FOUND,
  KG_ERR_TOOL_STATE_CREDENTIAL,
  KG_ERR_TOOL_STATE_LIMIT,
} from '../contract/api/errors.ts';
import { stepSystemIds, type Tool } from '../contract/api/tool.ts';
import type { ToolStateAnswer } from '../contract/api/tool-state.ts';
import type { JsonObject, JsonValue } from '../contract/json.ts';
import type { RunOrder } from '../contract/wire/run-order.ts';
import type { StateWrite } from '../contract/wire/tool-state.ts';
import { jsonBytes } from '../engine/data-size.ts';
import { credentialKeys, quoted, STATE_KEY } from '../engine/persisted-state.ts';
import { Redactor } from '../engine/redact.ts';
import type { EngineResult } from '../engine/types.ts';
import type { StoredRun, StoredRunState, StoreQueries } from '../store/index.ts';
import type { SystemResolver } from '../systems/cache.ts';

/** KUBEGLUE_TOOL_STATE_MAX_KEYS and KUBEGLUE_TOOL_STATE_MAX_VALUE_BYTES. */
export type StateLimits = Settings<'api'>['toolState'];

/** The limits when no setting is given (parts built in code). */
export function defaultStateLimits(): StateLimits {
  return defaultSettings('api').toolState;
}

/**
 * Whether runs of the tool read and write state: its definition mentions `persistedState` (a template,
 * selector or transform that reads or writes it). Other tools' runs skip the store read and the commit;
 * their sourceData has no such key.
 */
export function usesState(tool: Tool): boolean {
  return JSON.stringify(tool).includes(STATE_KEY);
}

/** The part of a run order about state: a fixture, the stored state, or nothing. */
export async function stateForRun(
  store: Pick<StoreQueries, 'toolState'>,
  run: Pick<StoredRun, 'toolId' | 'state'>,
  tool: Tool,
): Promise<Pick<RunOrder, 'persistedState' | 'stateVersion'>> {
  const fixture = run.state?.fixture;
  if (fixture !== undefined) return { persistedState: fixture };
  if (!usesState(tool)) return {};
  const stored = await store.toolState.get(run.toolId);
  return { persistedState: stored.state, stateVersion: stored.version };
}

/**
 * Why a state is past the limits, or undefined: more keys than allowed, or one of the `checked` keys (every
 * key when not given) with a value larger than allowed.
 */
export function limitProblem(
  state: JsonObject,
  limits: StateLimits,
  checked: Iterable<string> = Object.keys(state),
): string | undefined {
  const { maxKeys, maxValueBytes } = SETTINGS.tree.toolState;
  const keys = Object.keys(state).length;
  if (keys > limits.maxKeys) {
    return `it would have ${keys} keys, more than the limit of ${limits.maxKeys} (${maxKeys.name})`;
  }
  for (const key of checked) {
    if (!Object.hasOwn(state, key)) continue;
    const bytes = jsonBytes(state[key] as JsonValue);
    if (bytes > limits.maxValueBytes) {
      return (
        `the value of '${key}' is ${bytes} bytes of JSON, more than the limit of ${limits.maxValueBytes} ` +
        `(${maxValueBytes.name})`
      );
    }
  }
  return undefined;
}

/** A run's changes against the stored state. */
export interface MergeOutcome {
  /** The state to store; undefined: nothing to write. */
  next: JsonObject | undefined;
  /** Keys another writer changed since the run read them: the run's value is not saved. */
  conflicts: string[];
  /** Why nothing was saved although there were changes (a limit). */
  refused?: string;
}

/**
 * Per-key compare-and-set: a change is applied when the stored value is still what the run read (or is
 * already what the run wants); otherwise another run, or a PUT or DELETE of the state, changed the key since,
 * and its value stands. Then all or nothing: past a limit, no key is written.
 */
export function mergeRunWrites(
  current: JsonObject,
  writes: readonly StateWrite[],
  limits: StateLimits,
): MergeOutcome {
  const next: JsonObject = { ...current };
  const conflicts: string[] = [];
  const applied: string[] = [];
  for (const { key, before, after } of writes) {
    const stored = Object.hasOwn(current, key) ? current[key] : undefined;
    if (isDeepStrictEqual(stored, after)) continue;
    if (!isDeepStrictEqual(stored, before)) {
      conflicts.push(key);
      continue;
    }
    if (after === undefined) delete next[key];
    else
      Object.defineProperty(next, key, {
        value: after,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    applied.push(key);
  }
  if (applied.length === 0) return { next: undefined, conflicts };
  const refused = limitProblem(next, limits, applied);
  return refused ? { next: undefined, conflicts, refused } : { next, conflicts };
}

/** What a finished run records of its state: the record, and the warnings of the run. */
export interface RunStateCommit {
  record: StoredRunState | undefined;
  warnings: string[];
}

/**
 * Commits what a finished run changed in its tool's state, through `tx` (the transaction of the run's
 * terminal write, which it won): only when the run succeeded and read the stored state (not a fixture).
 */
export async function commitRunState(
  tx: Pick<StoreQueries, 'toolState'>,
  run: Pick<StoredRun, 'toolId' | 'state'>,
  result: Pick<EngineResult, 'status' | 'state'>,
  limits: StateLimits,
): Promise<RunStateCommit> {
  const changes = result.state;
  const fixture = run.state?.fixture;
  const record: StoredRunState = {
    ...(fixture !== undefined ? { fixture } : {}),
    ...(changes?.versionRead !== undefined ? { versionRead: changes.versionRead } : {}),
  };
  const warnings = [...(changes?.warnings ?? [])];
  const done = () => ({ record: Object.keys(record).length > 0 ? record : undefined, warnings });
  if (fixture !== undefined || result.status !== 'success' || !changes?.writes.length) return done();
  let outcome: MergeOutcome | undefined;
  const stored = await tx.toolState.update(run.toolId, (current) => {
    outcome = mergeRunWrites(current.state, changes.writes, limits);
    return outcome.next;
  });
  if (outcome?.conflicts.length) {
    const keys = outcome.conflicts;
    warnings.push(
      `persistedState ${keys.length === 1 ? 'key' : 'keys'} ${quoted(keys)} not saved: another run (or a ` +
        `change through /v1/tools/{id}/state) changed ${keys.length === 1 ? 'it' : 'them'} after this run read the state`,
    );
  }
  if (outcome?.refused) warnings.push(`persistedState was not saved: ${outcome.refused}`);
  if (outcome?.next) record.versionWritten = stored.version;
  return done();
}

export interface ToolStateServiceDeps {
  store: Pick<StoreQueries, 'toolState'>;
  tools: { get(toolId: string): Promise<Tool | undefined> };
  systems: SystemResolver;
  limits: StateLimits;
}

/** `/v1/tools/{id}/state`: the state of an existing tool, shown, replaced and reset. */
export class ToolStateService {
  readonly #deps: ToolStateServiceDeps;

  constructor(deps: ToolStateServiceDeps) {
    this.#deps = deps;
  }

  /** The state; values holding a credential of the tool's systems (stored before it was one) are masked. */
  async get(toolId: string): Promise<ToolStateAnswer> {
    const tool = await this.#tool(toolId);
    const stored = await this.#deps.store.toolState.get(toolId);
    const redactor = await this.#credentials(tool);
    return {
      toolId,
      state: redactor.value(stored.state),
      version: stored.version,
      updatedAt: stored.updatedAt ?? null,
    };
  }

  /** Replaces every key; refused past the limits or with a credential value of the tool's systems. */
  async replace(toolId: string, state: JsonObject) {
    const tool = await this.#tool(toolId);
    const problem = limitProblem(state, this.#deps.limits);
    if (problem) throw KG_ERR_TOOL_STATE_LIMIT(toolId, problem);
    const leaking = credentialKeys(await this.#credentials(tool), state);
    if (leaking.length > 0) throw KG_ERR_TOOL_STATE_CREDENTIAL(toolId, quoted(leaking));
    const { toolState } = this.#deps.store;
    const stored = await toolState.update(toolId, () => state);
    const running = await toolState.runningRuns(toolId);
    const warnings =
      running > 0
        ? [
            `${running} ${running === 1 ? 'run' : 'runs'} of tool '${toolId}' ${running === 1 ? 'is' : 'are'} in ` +
              'progress: their changes to keys whose value this replaced will not be saved (they conflict)',
          ]
        : [];
    return { toolId, version: stored.version, warnings };
  }

  /** Deletes every key (the next run starts from {}); the version goes on counting. */
  async reset(toolId: string) {
    await this.#tool(toolId);
    let deletedKeys = 0;
    const stored = await this.#deps.store.toolState.update(toolId, (current) => {
      deletedKeys = Object.keys(current.state).length;
      return {};
    });
    return { toolId, deletedKeys, version: stored.version };
  }

  /** The tool is gone: so is its state, version included (a new tool of that id starts from nothing). */
  async drop(toolId: string): Promise<void> {
    await this.#deps.store.toolState.drop(toolId);
  }

  async #tool(toolId: string): Promise<Tool> {
    const tool = await this.#deps.tools.get(toolId);
    if (!tool) throw KG_ERR_TOOL_NOT_FOUND(toolId);
    return tool;
  }

  /** Every credential value of the tool's systems, in both environments (a run may use either). */
  async #credentials(tool: Tool): Promise<Redactor> {
    const redactor = new Redactor();
    for (const id of stepSystemIds(tool.steps)) {
      for (const mode of ['prod', 'dev'] as const) {
        // A system (or environment) that does not exist has no credentials to keep out.
        // A System that is not Ready may still hold credentials: they are kept out all the same.
        const systems = await this.#deps.systems
          .resolveForRun([id], mode, { unready: 'allow' })
          .catch(() => []);
        for (const system of systems) {
          for (const [key, value] of Object.entries(system.credentials)) {
            redactor.add(value, `<<${system.id}_${key}>>`);
          }
        }
      }
    }
    return redactor;
  }
}
