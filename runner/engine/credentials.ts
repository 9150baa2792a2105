import type { JsonObject } from '../../crds/json.ts';
import type { RuntimeCredentials } from '../../crds/run.ts';
import { Redactor } from './redact.ts';
import type { ResolvedSystem } from './types.ts';

/** Credentials of one system after runtime overrides. */
export interface SystemCredentials {
  system: ResolvedSystem;
  values: Record<string, string>;
}

/**
 * The run's credential material, and the sourceData keys each kind of step may see
 * (semantics.md, "sourceData": a request step with a systemId sees that system only; other request
 * steps and transforms see all systems of the tool; selectors and outputTransform see none).
 */
export interface CredentialScope {
  bySystem: Map<string, SystemCredentials>;
  /** Runtime credentials given by their own names (not grouped under a system id). */
  loose: Record<string, string>;
  redactor: Redactor;
  /** Top-level keys plus `credentials` for the given systems. */
  keysFor(systemIds: Iterable<string>): JsonObject;
  all(): JsonObject;
}

export function buildCredentialScope(
  systems: ResolvedSystem[],
  runtime: RuntimeCredentials | undefined,
): CredentialScope {
  const bySystem = new Map<string, SystemCredentials>();
  for (const system of systems) bySystem.set(system.id, { system, values: { ...system.credentials } });

  const loose: Record<string, string> = {};
  for (const [name, value] of Object.entries(runtime ?? {})) {
    const owner = bySystem.get(name);
    if (typeof value === 'object') {
      // `{ crm: { apiKey } }` overrides system crm's apiKey.
      if (owner) Object.assign(owner.values, value);
      else bySystem.set(name, { system: { id: name, credentials: {} }, values: { ...value } });
      continue;
    }
    loose[name] = value;
    // `crm_apiKey` overrides system crm's apiKey.
    for (const [id, entry] of bySystem) {
      const prefix = `${id}_`;
      if (name.startsWith(prefix) && name.length > prefix.length)
        entry.values[name.slice(prefix.length)] = value;
    }
  }

  const redactor = new Redactor();
  for (const [id, { values }] of bySystem) {
    for (const [key, value] of Object.entries(values)) redactor.add(value, `<<${id}_${key}>>`);
    if (values.username && values.password) {
      const basic = Buffer.from(`${values.username}:${values.password}`).toString('base64');
      redactor.add(basic, `<<${id}_password>>`);
    }
  }
  for (const [name, value] of Object.entries(loose)) redactor.add(value, `<<${name}>>`);

  const keysFor = (systemIds: Iterable<string>): JsonObject => {
    const top: JsonObject = {};
    const grouped: JsonObject = {};
    for (const id of systemIds) {
      const entry = bySystem.get(id);
      if (!entry) continue;
      grouped[id] = { ...entry.values };
      for (const [key, value] of Object.entries(entry.values)) {
        top[`${id}_${key}`] = value;
        grouped[`${id}_${key}`] = value;
      }
      if (entry.system.url) top[`${id}_url`] = entry.system.url;
    }
    for (const [name, value] of Object.entries(loose)) {
      top[name] = value;
      grouped[name] = value;
    }
    return { ...top, credentials: grouped };
  };

  return { bySystem, loose, redactor, keysFor, all: () => keysFor(bySystem.keys()) };
}
