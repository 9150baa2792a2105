import type { RuntimeCredentials } from '../contract/api/run.ts';
import { RESERVED_STEP_IDS } from '../contract/api/tool.ts';
import type { JsonObject } from '../contract/json.ts';
import type { ResolvedSystem } from '../contract/wire/run-order.ts';
import { Redactor } from './redact.ts';

/** Credentials of one system after runtime overrides. */
export interface SystemCredentials {
  system: ResolvedSystem;
  values: Record<string, string>;
}

/**
 * The run's credential material, and the sourceData keys each kind of step may see
 * (semantics.md, "sourceData": a request step with a systemId sees that system only; other request
 * steps and transforms see all systems of the tool; selectors and outputTransform see none). Request
 * steps further see only the systems whose origin their URL has (see request-step.ts), and transforms
 * only the values of systems with codeAccess (credential-views.ts).
 */
export interface CredentialScope {
  bySystem: Map<string, SystemCredentials>;
  /** Runtime credentials given by their own names (not grouped under a system id). */
  loose: Record<string, string>;
  redactor: Redactor;
  /** Top-level keys plus `credentials` for the given systems (and the loose runtime credentials). */
  keysFor(systemIds: Iterable<string>): JsonObject;
  /** `<id>_url` of the given systems: where they are, which is no secret. */
  urlsFor(systemIds: Iterable<string>): JsonObject;
}

/** A runtime credential the run refuses; the message names it, never its value. */
export class RuntimeCredentialError extends Error {
  override name = 'RuntimeCredentialError';
}

const RESERVED: ReadonlySet<string> = new Set(RESERVED_STEP_IDS);
/** A credential key that is a URL decides where the other credentials go; only the stored system sets it. */
const URL_KEY = 'url';

export interface RuntimeCredentialContext {
  /** The run's inputs (payload keys at the root of sourceData). */
  inputs: JsonObject;
  /** Ids of the tool's steps. */
  stepIds: readonly string[];
}

/** The system a prefixed runtime name (`crm_apiKey`) addresses: the longest matching system id. */
function prefixedSystem(name: string, systemIds: Iterable<string>): { id: string; key: string } | undefined {
  let best: { id: string; key: string } | undefined;
  for (const id of systemIds) {
    const prefix = `${id}_`;
    if (name.startsWith(prefix) && name.length > prefix.length && (!best || id.length > best.id.length)) {
      best = { id, key: name.slice(prefix.length) };
    }
  }
  return best;
}

function refuse(reason: string): never {
  throw new RuntimeCredentialError(
    `Runtime credentials refused: ${reason}. Runtime credentials may set credential keys of the tool's ` +
      'systems (<systemId>_<key>, or {"<systemId>": {"<key>": …}}) and names of their own, but never a ' +
      "system's URL, an input, a step id or a reserved name",
  );
}

/**
 * Applies the runtime credentials to the systems, refusing the ones that could redirect or shadow
 * something: a system's `url` (it decides where that system's credentials go), a name of an input, a
 * step id or a reserved name (they would shadow it in sourceData), and a group for a system the tool
 * does not use.
 */
function applyRuntime(
  bySystem: Map<string, SystemCredentials>,
  runtime: RuntimeCredentials | undefined,
  context: RuntimeCredentialContext,
): Record<string, string> {
  const loose: Record<string, string> = {};
  const stepIds = new Set(context.stepIds);
  for (const [name, value] of Object.entries(runtime ?? {})) {
    if (typeof value === 'object') {
      const owner = bySystem.get(name);
      if (!owner) refuse(`{"${name}": …} names no system of this tool`);
      if (Object.hasOwn(value, URL_KEY))
        refuse(`{"${name}": {"url": …}} would change where system '${name}' is`);
      Object.assign(owner.values, value);
      continue;
    }
    const target = prefixedSystem(name, bySystem.keys());
    if (target) {
      if (target.key === URL_KEY) refuse(`'${name}' would replace the URL of system '${target.id}'`);
      // Only the system gets it: as a loose name it would reach steps of any origin.
      (bySystem.get(target.id) as SystemCredentials).values[target.key] = value;
      continue;
    }
    if (RESERVED.has(name)) refuse(`'${name}' is a reserved name`);
    if (stepIds.has(name)) refuse(`'${name}' is a step id`);
    if (Object.hasOwn(context.inputs, name)) refuse(`'${name}' is an input of this run`);
    loose[name] = value;
  }
  return loose;
}

/** Throws RuntimeCredentialError for a runtime credential the run refuses (see applyRuntime). */
export function buildCredentialScope(
  systems: ResolvedSystem[],
  runtime: RuntimeCredentials | undefined,
  context: RuntimeCredentialContext = { inputs: {}, stepIds: [] },
): CredentialScope {
  const bySystem = new Map<string, SystemCredentials>();
  for (const system of systems) bySystem.set(system.id, { system, values: { ...system.credentials } });
  const loose = applyRuntime(bySystem, runtime, context);

  const redactor = new Redactor();
  for (const [id, { values }] of bySystem) {
    for (const [key, value] of Object.entries(values)) redactor.add(value, `<<${id}_${key}>>`);
    if (values.username && values.password) {
      const basic = Buffer.from(`${values.username}:${values.password}`).toString('base64');
      redactor.add(basic, `<<${id}_password>>`);
    }
  }
  for (const [name, value] of Object.entries(loose)) redactor.add(value, `<<${name}>>`);

  const urlsFor = (systemIds: Iterable<string>): JsonObject => {
    const urls: JsonObject = {};
    for (const id of systemIds) {
      const url = bySystem.get(id)?.system.url;
      if (url) urls[`${id}_url`] = url;
    }
    return urls;
  };

  const keysFor = (systemIds: Iterable<string>): JsonObject => {
    const ids = [...systemIds];
    const top: JsonObject = {};
    const grouped: JsonObject = {};
    for (const id of ids) {
      const entry = bySystem.get(id);
      if (!entry) continue;
      grouped[id] = { ...entry.values };
      for (const [key, value] of Object.entries(entry.values)) {
        top[`${id}_${key}`] = value;
        grouped[`${id}_${key}`] = value;
      }
    }
    Object.assign(top, urlsFor(ids));
    for (const [name, value] of Object.entries(loose)) {
      top[name] = value;
      grouped[name] = value;
    }
    return { ...top, credentials: grouped };
  };

  return { bySystem, loose, redactor, keysFor, urlsFor };
}
