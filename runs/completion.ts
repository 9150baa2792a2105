/**
 * What a terminal run leaves to do after it (DESIGN.md "Completion effects"): the outbox rows its terminal
 * write carries, whoever writes it (an execution's finish in runs/execution/, a cancel, recovery, the
 * operator's verdicts), and the error of a cancelled run.
 */
import type { FinishRun, OutboxInput, StoredRun } from '../store/index.ts';
import { chainTarget } from './webhook-url.ts';

export const CANCELLED_MESSAGE = 'Run was cancelled';

/** Completion effects of a terminal run (DESIGN.md "Completion effects"): chains on success, notifications always. */
export function completionEffects(
  run: Pick<StoredRun, 'runId' | 'options'>,
  status: FinishRun['status'],
): OutboxInput[] {
  const webhookUrl = (run.options as { webhookUrl?: unknown } | undefined)?.webhookUrl;
  if (typeof webhookUrl !== 'string') return [];
  const toolId = chainTarget(webhookUrl);
  if (toolId !== undefined) {
    return status === 'success' ? [{ kind: 'chain', runId: run.runId, payload: { toolId } }] : [];
  }
  return [{ kind: 'notify', runId: run.runId, payload: { url: webhookUrl } }];
}
