import { isDeepStrictEqual } from 'node:util';
import type { JsonObject, JsonValue } from '../contract/json.ts';
import type { RunStateChanges, StateWrite } from '../contract/wire/tool-state.ts';
import { isJsonObject, setOwnKey } from './paths.ts';
import type { Redactor } from './redact.ts';

/** Where code finds the tool's persistent state: `sourceData.persistedState` (docs/state.md). */
export const STATE_KEY = 'persistedState';

/**
 * The persistent tool state of one run while the engine runs it: what the run read, what its transforms
 * made of it, and the changes it reports with its result. Every piece of code reads the current state;
 * transforms (transform steps and the output transform) are evaluated with the state captured after the
 * call (EvaluateOptions.capture), and what they changed is applied key by key, so loop items that run at
 * once each keep their own keys. Never stored here: the process that stores the run commits the changes.
 */
export class RunState {
  readonly #read: JsonObject;
  readonly #versionRead: number | undefined;
  /** Replaced, never mutated: a reference handed to an evaluation stays what that evaluation saw. */
  #current: JsonObject;
  readonly #warnings: string[] = [];

  constructor(read: JsonObject, versionRead: number | undefined) {
    this.#read = read;
    this.#versionRead = versionRead;
    this.#current = read;
  }

  get current(): JsonObject {
    return this.#current;
  }

  /**
   * Applies what one evaluation did: `before` is the state it was given, `after` the state it left. Keys it
   * added, changed or deleted change; keys it left alone keep what other evaluations did meanwhile. A state
   * replaced by something that is not an object is ignored with a warning.
   */
  apply(before: JsonObject, after: JsonValue, label: string): void {
    if (!isJsonObject(after)) {
      const what = after === null ? 'null' : Array.isArray(after) ? 'an array' : `a ${typeof after}`;
      this.#warn(
        `${label} set sourceData.${STATE_KEY} to ${what}; it must stay an object, so its changes were ignored`,
      );
      return;
    }
    const next: JsonObject = { ...this.#current };
    let changed = false;
    for (const [key, value] of Object.entries(after)) {
      if (Object.hasOwn(before, key) && isDeepStrictEqual(before[key], value)) continue;
      setOwnKey(next, key, value);
      changed = true;
    }
    for (const key of Object.keys(before)) {
      if (Object.hasOwn(after, key) || !Object.hasOwn(next, key)) continue;
      delete next[key];
      changed = true;
    }
    if (changed) this.#current = next;
  }

  /**
   * The run's changes against what it read. A change that holds a credential value of the run (a stored or
   * runtime credential, in a key or a value) refuses the whole write: state is stored unencrypted.
   */
  changes(redactor: Redactor): RunStateChanges {
    const writes: StateWrite[] = [];
    for (const key of new Set([...Object.keys(this.#read), ...Object.keys(this.#current)])) {
      const had = Object.hasOwn(this.#read, key);
      const has = Object.hasOwn(this.#current, key);
      if (had === has && (!had || isDeepStrictEqual(this.#read[key], this.#current[key]))) continue;
      writes.push({
        key,
        ...(had ? { before: this.#read[key] as JsonValue } : {}),
        ...(has ? { after: this.#current[key] as JsonValue } : {}),
      });
    }
    const written: JsonObject = {};
    for (const write of writes) if (write.after !== undefined) setOwnKey(written, write.key, write.after);
    const leaking = credentialKeys(redactor, written);
    if (leaking.length > 0) {
      this.#warn(
        `persistedState was not saved: ${quoted(leaking)} ${leaking.length === 1 ? 'holds' : 'hold'} a credential ` +
          "value of the run's systems (state is stored unencrypted; keep credentials out of it)",
      );
      writes.length = 0;
    }
    return {
      ...(this.#versionRead !== undefined ? { versionRead: this.#versionRead } : {}),
      writes,
      warnings: [...this.#warnings],
    };
  }

  #warn(warning: string): void {
    if (!this.#warnings.includes(warning)) this.#warnings.push(warning);
  }
}

/**
 * Keys of `values` whose name or value holds a credential value the redactor knows (the forms it
 * recognises: encoded, inside longer text), named as they may be shown (a name that is a credential is
 * its placeholder).
 */
export function credentialKeys(redactor: Redactor, values: JsonObject): string[] {
  if (redactor.size === 0) return [];
  const keys: string[] = [];
  for (const [key, value] of Object.entries(values)) {
    const entry = { [key]: value };
    if (JSON.stringify(redactor.value(entry)) !== JSON.stringify(entry)) keys.push(redactor.string(key));
  }
  return keys;
}

/** `'a', 'b'` for messages. */
export function quoted(keys: readonly string[]): string {
  return keys.map((key) => `'${key}'`).join(', ');
}
