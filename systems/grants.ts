import { KG_ERR_SYSTEM_NOT_GRANTED } from '../contract/api/errors.ts';

/** A tool's steps as far as their systems go (the step schema, or a stored run's tool snapshot). */
type Steps = ReadonlyArray<{ id: string; config: { type?: string; systemId?: string } }>;

/**
 * Refuses a tool whose steps use a system outside `allowed` (the systemIds of the API key saving or
 * running it; null: every system), naming the first such system and its step. Only names are compared,
 * before any system is looked up, so the answer says nothing about whether the system exists. Transform
 * steps use no system (stepSystemIds in contract/api/tool.ts counts the same way).
 */
export function assertSystemsGranted(allowed: readonly string[] | null, steps: Steps): void {
  const ungranted = ungrantedSystem(allowed, steps);
  if (ungranted) throw KG_ERR_SYSTEM_NOT_GRANTED(ungranted.systemId, `step '${ungranted.stepId}'`);
}

/** The first step using a system outside `allowed` (null: every system), and that system. */
export function ungrantedSystem(
  allowed: readonly string[] | null,
  steps: Steps,
): { stepId: string; systemId: string } | undefined {
  if (allowed === null) return undefined;
  for (const step of steps) {
    const systemId = step.config.type === 'transform' ? undefined : step.config.systemId;
    if (systemId && !allowed.includes(systemId)) return { stepId: step.id, systemId };
  }
  return undefined;
}
