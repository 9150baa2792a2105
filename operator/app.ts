import type { JsonObject } from '../crds/json.ts';
import type { KubeglueResources } from '../kube/resources/index.ts';
import type { PoolLauncher } from '../runs/launcher.ts';
import { runView, type UrlForFile } from '../runs/run-view.ts';
import type { Store } from '../store/index.ts';
import { deriveKey } from '../store/secret-box.ts';
import { type ChainStarter, createChainHandler } from './chain-handler.ts';
import { createNotifyHandler } from './notify.ts';
import { OutboxDelivery } from './outbox.ts';
import { createStartHandler } from './start-handler.ts';
import { ToolRunController } from './toolrun-controller.ts';

/** Result data included in a completion notification, at most (larger: `dataTruncated: true`). */
const NOTIFY_DATA_LIMIT_BYTES = 256 * 1024;

export interface OperatorDeps {
  store: Store;
  resources: KubeglueResources;
  namespace: string;
  launcher: PoolLauncher;
  /** Starts chained runs (`options.webhookUrl: "tool:<id>"`). */
  chains: ChainStarter;
  urlFor: UrlForFile;
  masterKey: Buffer;
  notifySecret: string | undefined;
  notifyAllowPrivate: boolean;
  notifyRetryDelaysMs: readonly number[];
  maxAsyncRuns: number;
  toolRunRetentionMs: number;
  outboxRetentionMs: number;
  log: (line: string) => void;
}

export interface Operator {
  /** Aborts the runs this process executes, waits for their outcome, stops the loops. */
  close(): Promise<void>;
}

/** `whsec_<base64>` (Standard Webhooks) or any other text as its bytes; else derived from the master key. */
export function notificationSigningKey(secret: string | undefined, masterKey: Buffer): Buffer {
  if (!secret) return deriveKey(masterKey, 'kubeglue/notifications/v1');
  return secret.startsWith('whsec_')
    ? Buffer.from(secret.slice('whsec_'.length), 'base64')
    : Buffer.from(secret, 'utf8');
}

/** The Run a completion notification carries: no credentials, `data` for successful runs up to a cap. */
function notificationBody(store: Store, urlFor: UrlForFile) {
  return async (runId: string): Promise<JsonObject | undefined> => {
    const run = await store.getRun(runId);
    if (!run) return undefined;
    const view = runView(run, { urlFor }) as unknown as JsonObject;
    if (run.status !== 'success') return view;
    const result = await store.getRunResult(runId);
    const data = result?.data ?? null;
    return Buffer.byteLength(JSON.stringify(data)) <= NOTIFY_DATA_LIMIT_BYTES
      ? { ...view, data }
      : { ...view, dataTruncated: true };
  };
}

/** The operator's loops: the ToolRun controller and the outbox delivery (starts, notifications, chains). */
export async function startOperator(deps: OperatorDeps): Promise<Operator> {
  const { store, resources, namespace, log } = deps;
  const controller = new ToolRunController({
    resources,
    store,
    launcher: deps.launcher,
    maxConcurrent: deps.maxAsyncRuns,
    retentionMs: deps.toolRunRetentionMs,
    log,
  });
  const notify = createNotifyHandler({
    renderRun: notificationBody(store, deps.urlFor),
    signingKey: notificationSigningKey(deps.notifySecret, deps.masterKey),
    allowPrivate: deps.notifyAllowPrivate,
    retryDelaysMs: deps.notifyRetryDelaysMs,
  });
  const outbox = new OutboxDelivery({
    store,
    log,
    handlers: {
      start: createStartHandler({ store, resources, namespace }),
      notify,
      chain: createChainHandler({ store, starter: deps.chains }),
    },
  });
  await controller.start();
  await outbox.start();
  // Delivered and abandoned completion effects are kept a while for inspection, then dropped.
  const pruneOutbox = setInterval(
    () => {
      store
        .pruneOutbox(new Date(Date.now() - deps.outboxRetentionMs).toISOString())
        .catch((error: unknown) => {
          log(`outbox: pruning finished rows failed: ${(error as Error).message}`);
        });
    },
    Math.min(60 * 60 * 1000, deps.outboxRetentionMs),
  ).unref();

  return {
    close: async () => {
      clearInterval(pruneOutbox);
      await controller.stop();
      await outbox.stop();
      await notify.close();
    },
  };
}
