/**
 * The System controller's wiring: the Systems informer, optionally a Secrets watch (metadata only: the
 * operator keeps no credential values in this cache) and a work queue. A System is checked when it
 * changes, when a sibling of the same id changes (the dev/prod link), and when its Secret changes.
 */

import { CREDENTIAL_SHAPES } from '../../contract/api/system.ts';
import type { SystemResource } from '../../contract/resources/kinds.ts';
import { Informer } from '../../kube/informer.ts';
import type { ListOptions, ResourceClient, WatchEvent, WatchOptions } from '../../kube/resources/index.ts';
import { type SecretStore, SecretUnreadableError } from '../../kube/secrets/interface.ts';
import type { Secret } from '../../kube/types.ts';
import type { WorkQueue } from '../../kube/work-queue.ts';
import { conditionChangeEvent, type EventRecorder, NO_EVENTS } from '../events.ts';
import type { ControllerHealth } from '../health.ts';
import { informerOptions } from '../informer-options.ts';
import { reconcileQueue } from '../reconcile-queue.ts';
import { writeDecidedStatus } from '../status.ts';
import { type CredentialCheck, decideSystem, readyCondition, type SystemObservation } from './reconcile.ts';

export interface SystemControllerOptions {
  systems: ResourceClient<SystemResource>;
  /** Reads credentials Secrets (the same store runs resolve credentials from). */
  secrets: SecretStore;
  /** Watch of Secrets in the namespace (Kubernetes); without it Systems are re-checked on resync only. */
  secretWatch?: Pick<ResourceClient<Secret>, 'list' | 'watch'>;
  /** Where the Ready condition's changes are told (`kubectl describe system`); nowhere without it. */
  events?: EventRecorder;
  resyncMs?: number;
  log?: (line: string) => void;
  now?: () => Date;
}

type SecretMeta = Pick<Secret, 'apiVersion' | 'kind' | 'metadata'>;

/** Secrets reduced to their metadata, so the informer never holds a credential value. */
function metadataOnly(client: Pick<ResourceClient<Secret>, 'list' | 'watch'>): ResourceClient<SecretMeta> {
  const strip = (secret: Secret): SecretMeta => ({
    apiVersion: secret.apiVersion,
    kind: secret.kind,
    metadata: secret.metadata,
  });
  return {
    list: async (opts?: ListOptions) => {
      const result = await client.list(opts);
      return { ...result, items: result.items.map(strip) };
    },
    watch: async function* (opts: WatchOptions): AsyncIterable<WatchEvent<SecretMeta>> {
      for await (const event of client.watch(opts)) yield { type: event.type, object: strip(event.object) };
    },
  } as unknown as ResourceClient<SecretMeta>;
}

/** Key names and what is wrong with them; never a value. */
export async function checkCredentials(
  system: SystemResource,
  secrets: SecretStore,
): Promise<CredentialCheck> {
  const secretName = system.spec.credentialsSecretRef?.name;
  if (!secretName) return { state: 'none' };
  let data: Record<string, string> | undefined;
  try {
    data = await secrets.get(secretName);
  } catch (error) {
    if (error instanceof SecretUnreadableError) return { state: 'unreadable', secretName };
    throw error;
  }
  if (!data) return { state: 'missing', secretName };
  const authType = system.spec.authType;
  if (!authType) return { state: 'present', secretName, problems: [] };
  const parsed = CREDENTIAL_SHAPES[authType].safeParse(data);
  if (parsed.success) return { state: 'present', secretName, problems: [] };
  const problems = new Set<string>();
  for (const issue of parsed.error.issues) {
    const key = issue.path[0] === undefined ? undefined : String(issue.path[0]);
    if (key === undefined) problems.add('the keys do not fit');
    else problems.add(key in data ? `${key}: invalid value` : `${key}: missing`);
  }
  return { state: 'present', secretName, problems: [...problems] };
}

export class SystemController {
  readonly #opts: SystemControllerOptions;
  readonly #systems: Informer<SystemResource>;
  readonly #secrets: Informer<SecretMeta> | undefined;
  readonly #queue: WorkQueue;

  constructor(opts: SystemControllerOptions) {
    this.#opts = opts;
    const informers = informerOptions(opts);
    this.#systems = new Informer(opts.systems, informers);
    this.#secrets = opts.secretWatch ? new Informer(metadataOnly(opts.secretWatch), informers) : undefined;
    this.#queue = reconcileQueue('system', (name) => this.#reconcile(name), opts.log);
  }

  async start(): Promise<void> {
    // Every change and, at each resync, every System (a Secret changed unwatched is seen then).
    this.#systems.on('change', (name) => this.#queue.add(name));
    this.#systems.onEvent((_type, system) => {
      // Siblings share the id: their EnvironmentsLinked and duplicate checks change too.
      for (const sibling of this.#siblings(system)) this.#queue.add(sibling.metadata.name);
    });
    this.#secrets?.onEvent((_type, secret) => {
      this.#opts.secrets.forget?.(secret.metadata.name);
      for (const system of this.#systems.values()) {
        if (system.spec.credentialsSecretRef?.name === secret.metadata.name)
          this.#queue.add(system.metadata.name);
      }
    });
    await this.#systems.start();
    await this.#secrets?.start();
  }

  async stop(): Promise<void> {
    await this.#queue.shutdown();
    await Promise.all([this.#systems.stop(), this.#secrets?.stop()]);
  }

  idle(): Promise<void> {
    return this.#queue.idle();
  }

  /** Informers and queue for the operator's metrics. */
  health(): ControllerHealth {
    return { informers: [this.#systems], queues: { system: this.#queue } };
  }

  #siblings(system: SystemResource): SystemResource[] {
    return this.#systems
      .values()
      .filter((other) => other.metadata.name !== system.metadata.name && other.spec.id === system.spec.id);
  }

  async #reconcile(name: string): Promise<void> {
    const system = this.#systems.get(name);
    if (!system) return;
    const credentials = await checkCredentials(system, this.#opts.secrets);
    const observation: SystemObservation = {
      now: this.#opts.now?.() ?? new Date(),
      system,
      credentials,
      siblings: this.#siblings(system),
    };
    const { patch } = decideSystem(observation);
    if (!patch) return;
    const written = await writeDecidedStatus(this.#opts.systems, this.#systems, system, patch);
    const event = written && conditionChangeEvent(system.status?.conditions, readyCondition(observation));
    if (event) await (this.#opts.events ?? NO_EVENTS).record(written, event.reason, event.message);
  }
}
