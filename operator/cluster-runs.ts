import { Tool } from '../contract/api/tool.ts';
import { resourceNameForId, toolFromResource } from '../contract/resources/convert.ts';
import type { KubeglueResources } from '../kube/resources/index.ts';
import type { SecretStore } from '../kube/secrets/interface.ts';
import { propagateCancel } from '../runs/cancel.ts';
import type { UrlForFile } from '../runs/run-view.ts';
import { StoreRuntimeCredentialVault } from '../runs/runtime-credentials.ts';
import { RunService } from '../runs/service.ts';
import type { Store } from '../store/index.ts';
import { SystemCache } from '../systems/cache.ts';
import type { ChainStarter } from './outbox/chain.ts';
import type { ScheduledRunStarter } from './schedule/execute.ts';
import { scheduledRunsOf } from './schedule/starter.ts';

/**
 * Chained and scheduled runs started by the operator of the Kubernetes deployment: the same RunService
 * the API uses, reading Tools and Systems from the API server. Both are always async, so no worker pool;
 * a run a schedule replaces is cancelled through its ToolRun.
 */
export async function createClusterRunStarters(deps: {
  store: Store;
  resources: KubeglueResources;
  secrets: SecretStore;
  masterKey: Buffer;
  urlFor: UrlForFile;
  executor: string;
}): Promise<ChainStarter & { scheduled: ScheduledRunStarter; close(): Promise<void> }> {
  const systems = new SystemCache({ systems: deps.resources.systems, secrets: deps.secrets });
  await systems.start();
  const runs = new RunService({
    store: deps.store,
    tools: {
      get: async (toolId) => {
        const resource = await deps.resources.tools.get(resourceNameForId(toolId));
        if (!resource) return undefined;
        // A Tool written with kubectl that breaks the schema cannot run; its Ready condition says why.
        const parsed = Tool.safeParse(toolFromResource(resource));
        return parsed.success ? parsed.data : undefined;
      },
    },
    systems: { resolveForRun: async (ids, mode) => (await systems.snapshot()).resolve(ids, mode) },
    vault: new StoreRuntimeCredentialVault({ store: deps.store, masterKey: deps.masterKey }),
    urlFor: deps.urlFor,
    maxSyncRuns: 0,
    executor: deps.executor,
    onCancelled: propagateCancel({ store: deps.store, toolRuns: deps.resources.toolRuns }),
  });
  return {
    startChained: async (chain) => {
      await runs.startChained(chain);
    },
    recordRefused: (refused) => runs.recordRefusedChain(refused),
    scheduled: scheduledRunsOf(runs),
    close: () => systems.close(),
  };
}
