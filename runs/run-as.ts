/**
 * The API key a deferred run acts as, as that key is now. A schedule's tick and a chain start runs long
 * after the request that asked for them, with the rights of the key that made it (spec.runAs, the parent
 * run's userId and restrictions): before each start they look at the key again, so a revoked key starts
 * nothing more, and a key whose rights narrowed starts runs only within what it may still do.
 */
import type { Store, StoredApiKey } from '../store/index.ts';
import { ungrantedSystem } from '../systems/grants.ts';
import type { Caller } from './context.ts';

/** The key a user id names, now. */
export type KeyNow =
  /** No API key ever had this id: the run was not asked for by a key (a schedule applied with kubectl). */
  | { kind: 'none' }
  | { kind: 'revoked'; keyId: string; revokedAt: string }
  | { kind: 'active'; key: Pick<StoredApiKey, 'id' | 'admin' | 'scopes' | 'toolIds' | 'systemIds'> };

/** Why a key may not start the run now, and whether it is gone or only narrowed. */
export interface KeyProblem {
  kind: 'revoked' | 'not-allowed';
  keyId: string;
  /** What is wrong, after the key's name: `was revoked (…)`, `may no longer use tool 'x'`. */
  what: string;
}

/** Looks the key up in the store (revoked keys keep their row, so an unknown id was never a key). */
export async function keyNow(
  store: Pick<Store, 'findApiKeyById'>,
  userId: string | undefined,
): Promise<KeyNow> {
  if (!userId) return { kind: 'none' };
  const found = await store.findApiKeyById(userId);
  if (!found) return { kind: 'none' };
  if (found.revokedAt !== null) return { kind: 'revoked', keyId: userId, revokedAt: found.revokedAt };
  return { kind: 'active', key: found.key };
}

/**
 * Whether the key may start a run of the tool now, as a run request of it would be judged: it is not
 * revoked, it has runs:execute (an admin key has every scope), the tool is one of its tools and the
 * tool's steps use only its systems. `steps`: undefined skips the systems (acceptance checks them).
 */
export function keyProblem(
  key: KeyNow,
  toolId: string,
  steps?: ReadonlyArray<{ id: string; config: { type?: string; systemId?: string } }>,
): KeyProblem | undefined {
  if (key.kind === 'none') return undefined;
  if (key.kind === 'revoked') {
    return { kind: 'revoked', keyId: key.keyId, what: `was revoked (${key.revokedAt})` };
  }
  const { id, admin, scopes, toolIds, systemIds } = key.key;
  const notAllowed = (what: string): KeyProblem => ({ kind: 'not-allowed', keyId: id, what });
  if (!admin && !scopes.includes('runs:execute')) return notAllowed('no longer has the scope runs:execute');
  if (!admin && toolIds !== null && !toolIds.includes(toolId)) {
    return notAllowed(`may no longer use tool '${toolId}'`);
  }
  const ungranted = steps && !admin ? ungrantedSystem(systemIds, steps) : undefined;
  if (ungranted) {
    return notAllowed(`may no longer use system '${ungranted.systemId}' (step '${ungranted.stepId}')`);
  }
  return undefined;
}

function within(recorded: readonly string[] | null, now: readonly string[] | null): string[] | null {
  if (now === null) return recorded === null ? null : [...recorded];
  if (recorded === null) return [...now];
  return recorded.filter((id) => now.includes(id));
}

/**
 * The caller a deferred run starts as: what was recorded when it was asked for, narrowed to what the key
 * may do now (never widened: a key given more tools later does not widen a schedule written before).
 */
export function narrowedCaller(recorded: Caller, key: KeyNow): Caller {
  if (key.kind !== 'active' || key.key.admin) return recorded;
  return {
    id: recorded.id,
    toolIds: within(recorded.toolIds, key.key.toolIds),
    systemIds: within(recorded.systemIds, key.key.systemIds),
  };
}
