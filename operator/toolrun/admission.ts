/**
 * Admission: how many runs may execute at once, globally and per namespace. Pure: given every ToolRun
 * the controller knows, it says which waiting ones get a slot now, in creation order, and where the
 * others stand in the queue.
 */
import { SETTINGS } from '../../config/config.ts';
import { AdmissionReason, ToolRunConditionType } from '../../contract/reasons.ts';
import type { ToolRunResource } from '../../contract/resources/kinds.ts';
import { toolQueueMessage } from '../../runs/capacity.ts';

export interface AdmissionLimits {
  global: number;
  perNamespace?: number | undefined;
}

/** A ToolRun as admission sees it. */
export interface AdmissionEntry {
  namespace: string;
  name: string;
  /** metadata.creationTimestamp (second precision on a real API server). */
  createdAt: string;
  /** Tie-break within one second: the order this process first saw the ToolRuns in. */
  seq: number;
  /** active: holds a slot; waiting: wants one; done: neither. */
  state: 'active' | 'waiting' | 'done';
}

export type AdmissionVerdict =
  | { admit: true }
  | {
      admit: false;
      /** 1-based place among the runs waiting for the same limit. */
      position: number;
      scope: 'global' | 'namespace';
      inUse: number;
      limit: number;
    }
  | {
      admit: false;
      /** 1-based place in the tool's queue (in the store: across replicas and sync runs). */
      position: number;
      scope: 'tool';
      toolId: string;
      inUse: number;
      limit: number;
    };

/** A run waiting for its tool's slot asks the store again this often (slots freed by other processes). */
export const TOOL_QUEUE_RECHECK_MS = 1_000;

const TERMINAL = new Set(['success', 'failed', 'aborted']);

export function isAdmitted(toolRun: ToolRunResource): boolean {
  return (
    toolRun.status?.conditions?.some(
      (c) => c.type === ToolRunConditionType.Admitted && c.status === 'True',
    ) ?? false
  );
}

/** Waiting for one of its tool's slots (maxConcurrentRuns), not for the global or namespace limit. */
export function waitsForTool(toolRun: ToolRunResource): boolean {
  return (
    toolRun.status?.conditions?.some(
      (c) =>
        c.type === ToolRunConditionType.Admitted &&
        c.status === 'False' &&
        c.reason === AdmissionReason.ToolConcurrencyLimit,
    ) ?? false
  );
}

export function isFinished(toolRun: ToolRunResource): boolean {
  return TERMINAL.has(toolRun.status?.status ?? '');
}

/** Whether a ToolRun holds a slot, wants one, or neither (finished, cancelled, being deleted). */
export function admissionState(toolRun: ToolRunResource): AdmissionEntry['state'] {
  if (isFinished(toolRun)) return 'done';
  if (isAdmitted(toolRun)) return 'active';
  if (toolRun.metadata.deletionTimestamp || toolRun.spec.cancel) return 'done';
  return 'waiting';
}

export function admissionKey(entry: Pick<AdmissionEntry, 'namespace' | 'name'>): string {
  return `${entry.namespace}/${entry.name}`;
}

function byCreation(a: AdmissionEntry, b: AdmissionEntry): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  if (a.seq !== b.seq) return a.seq - b.seq;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * The verdict of every waiting entry, by admissionKey: the oldest waiting runs get the free slots (a
 * namespace at its own limit does not hold back the others); the rest learn their queue position.
 */
export function admissionQueue(
  entries: readonly AdmissionEntry[],
  limits: AdmissionLimits,
): Map<string, AdmissionVerdict> {
  let globalInUse = 0;
  const namespaceInUse = new Map<string, number>();
  for (const entry of entries) {
    if (entry.state !== 'active') continue;
    globalInUse++;
    namespaceInUse.set(entry.namespace, (namespaceInUse.get(entry.namespace) ?? 0) + 1);
  }
  const verdicts = new Map<string, AdmissionVerdict>();
  let blockedGlobally = 0;
  const blockedInNamespace = new Map<string, number>();
  for (const entry of entries.filter((e) => e.state === 'waiting').sort(byCreation)) {
    const inNamespace = namespaceInUse.get(entry.namespace) ?? 0;
    if (limits.perNamespace !== undefined && inNamespace >= limits.perNamespace) {
      const position = (blockedInNamespace.get(entry.namespace) ?? 0) + 1;
      blockedInNamespace.set(entry.namespace, position);
      verdicts.set(admissionKey(entry), {
        admit: false,
        position,
        scope: 'namespace',
        inUse: inNamespace,
        limit: limits.perNamespace,
      });
    } else if (globalInUse >= limits.global) {
      blockedGlobally++;
      verdicts.set(admissionKey(entry), {
        admit: false,
        position: blockedGlobally,
        scope: 'global',
        inUse: globalInUse,
        limit: limits.global,
      });
    } else {
      globalInUse++;
      namespaceInUse.set(entry.namespace, inNamespace + 1);
      verdicts.set(admissionKey(entry), { admit: true });
    }
  }
  return verdicts;
}

/** Positions past this read "over N", so a long queue does not rewrite every waiting ToolRun per admission. */
export const EXACT_POSITIONS = 100;

/** The Admitted=False message of a waiting run. */
export function queuedMessage(
  verdict: Extract<AdmissionVerdict, { admit: false }>,
  namespace: string,
): string {
  if (verdict.scope === 'tool') {
    return toolQueueMessage(verdict.toolId, verdict.position, verdict.inUse, verdict.limit);
  }
  const position = verdict.position <= EXACT_POSITIONS ? `${verdict.position}` : `over ${EXACT_POSITIONS}`;
  const what =
    verdict.scope === 'global'
      ? `${verdict.inUse} of ${verdict.limit} runs executing (limit ${SETTINGS.tree.maxAsyncRuns.name})`
      : `${verdict.inUse} of ${verdict.limit} runs of namespace ${namespace} executing (limit ${SETTINGS.tree.maxAsyncRunsPerNamespace.name})`;
  return `Waiting for an execution slot: position ${position} in the queue; ${what}`;
}
