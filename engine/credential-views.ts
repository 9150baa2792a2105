/**
 * What user code sees of a run's credentials (docs/security.md, "What a tool author can do with a system
 * they may use"):
 * - transforms see the values of systems with `codeAccess`; every other system credential exists for
 *   them (its name shows) but reading it throws a message that names the setting;
 * - request-step templates see the values of the systems whose origins include the request's origin,
 *   whatever codeAccess says; a credential of any other candidate system throws when read;
 * - a function that can read a credential withheld from code (a request template bound to the system's
 *   origin) runs in a sandbox context of its own and its failure messages are not shown (see
 *   withheldFailure), so it can hand a credential to nothing but the request.
 * Runtime credentials given by their own names (not a system's keys) are the caller's: visible to all.
 * Pure.
 */
import type { JsonObject } from '../contract/json.ts';
import type { CredentialScope } from './credentials.ts';
import { describeOrigins, systemOrigins } from './origins.ts';
import type { GuardedProperty } from './types.ts';

export interface CredentialView {
  /** Added to sourceData: `<id>_url`, the credential values code may read, loose runtime credentials. */
  data: JsonObject;
  /** Credentials that exist for code but throw when read; their values are not in `data`. */
  guarded: GuardedProperty[];
  /** Systems without codeAccess whose credential values are in `data`. */
  exposes: string[];
}

/** Where sourceData holds credential `key` of system `id` (semantics.md, "sourceData"). */
function pathsOf(id: string, key: string): string[][] {
  return [[`${id}_${key}`], ['credentials', id, key], ['credentials', `${id}_${key}`]];
}

export function hasCodeAccess(scope: CredentialScope, id: string): boolean {
  return scope.bySystem.get(id)?.system.codeAccess === true;
}

/** What code that reaches for a credential of a system without codeAccess is told. */
export function codeAccessMessage(id: string, key: string): string {
  return (
    `credential ${id}_${key} is not available to code: system '${id}' does not allow it ` +
    `(set codeAccess: true on the system if code must read its credentials, e.g. to sign requests: ` +
    `PATCH /v1/systems/${id} {"codeAccess": true}, or spec.codeAccess in its System resource; ` +
    `a request step to the system's origin can use <<${id}_${key}>> without it)`
  );
}

function notSentMessage(scope: CredentialScope, id: string, key: string, destination: string): string {
  const system = scope.bySystem.get(id)?.system;
  const origins = describeOrigins(system ? systemOrigins(system) : new Set());
  return (
    `credential ${id}_${key} is not sent to ${destination}: it is not one of the origins of system '${id}' ` +
    `(${origins}); list it in the system's extraOrigins to allow it`
  );
}

function guards(
  scope: CredentialScope,
  ids: Iterable<string>,
  message: (id: string, key: string) => string,
): GuardedProperty[] {
  const out: GuardedProperty[] = [];
  for (const id of ids) {
    for (const key of Object.keys(scope.bySystem.get(id)?.values ?? {})) {
      const text = message(id, key);
      for (const path of pathsOf(id, key)) out.push({ path, message: text });
    }
  }
  return out;
}

/** Transform code: values of the systems with codeAccess, guards for the others. */
export function transformView(scope: CredentialScope): CredentialView {
  const ids = [...scope.bySystem.keys()];
  const open = ids.filter((id) => hasCodeAccess(scope, id));
  const closed = ids.filter((id) => !open.includes(id));
  return {
    data: { ...scope.urlsFor(ids), ...scope.keysFor(open) },
    guarded: guards(scope, closed, codeAccessMessage),
    exposes: [],
  };
}

/**
 * A request step's templates once its origin is known: values of the `allowed` systems (those whose
 * origins include it), guards for the other candidates naming the destination.
 */
export function requestView(
  scope: CredentialScope,
  candidates: readonly string[],
  allowed: readonly string[],
  destination: string,
): CredentialView {
  const withheld = candidates.filter((id) => !allowed.includes(id));
  return {
    data: { ...scope.urlsFor(candidates), ...scope.keysFor(allowed) },
    guarded: guards(scope, withheld, (id, key) => notSentMessage(scope, id, key, destination)),
    exposes: allowed.filter((id) => !hasCodeAccess(scope, id)),
  };
}

/** JavaScript error names that say nothing but the kind of error. */
const STANDARD_ERRORS = new Set([
  'Error',
  'TypeError',
  'RangeError',
  'ReferenceError',
  'SyntaxError',
  'EvalError',
  'URIError',
  'AggregateError',
]);

/**
 * The failure of a function that could read credentials withheld from code, as it may be shown: its
 * message, error name and position are chosen by the code (a thrown message, a name, a forged stack)
 * and could spell a credential, so only a standard error name is kept. Failures that carry no data of
 * the code (compile errors, timeouts, memory, aborts: the sandbox's `kind`) and the guards' own
 * messages pass unchanged.
 */
export function withheldFailure(error: unknown, view: CredentialView, label: string): unknown {
  const failure = (error ?? {}) as { kind?: unknown; detail?: unknown; errorName?: unknown };
  if (failure.kind !== undefined && failure.kind !== 'runtime') return error;
  const detail = typeof failure.detail === 'string' ? failure.detail : undefined;
  const guard = view.guarded.find((entry) => entry.message === detail);
  if (guard) return new Error(`${label}: ${guard.message}`);
  const name =
    typeof failure.errorName === 'string' && STANDARD_ERRORS.has(failure.errorName)
      ? failure.errorName
      : 'an error';
  const systems = view.exposes.map((id) => `'${id}'`).join(', ');
  const whose = view.exposes.length === 1 ? `system ${systems}, which does` : `systems ${systems}, which do`;
  return new Error(
    `${label}: failed with ${name}; its message and position are not shown because this code can read ` +
      `credentials of ${whose} not allow code to see them (codeAccess is off)`,
  );
}
