import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, inject } from 'vitest';
import { loadKubeConfig } from '../../../kube/kubeconfig.ts';
import { ClusterTransport } from '../../../kube/resources/index.ts';
import { createTestNamespace, type KubeHandle, kubeHandle, type TestNamespace } from './client.ts';
import { installCrds } from './kubeglue.ts';

const exec = promisify(execFile);

export type { AuditEvent, KubeConnection, KubeHandle, TestNamespace } from './client.ts';
export { createTestNamespace } from './client.ts';

/** The run's control plane started by the global setup, or null when KUBEBUILDER_ASSETS is unset. */
export function providedKube(): KubeHandle | null {
  const connection = inject('kube');
  return connection ? kubeHandle(connection) : null;
}

/** For use inside a describeKube block (hooks and tests), where the control plane is known to exist. */
export function requireKube(): KubeHandle {
  const kube = providedKube();
  if (!kube) throw new Error('no test control plane: set KUBEBUILDER_ASSETS (see test/support/kube)');
  return kube;
}

/** `describe` when the run has a control plane, else `describe.skip`, so the suite still runs without one. */
export const describeKube = describe.skipIf(!inject('kube'));

/** What a describeKube block works in; each part exists from the block's first hook on. */
export interface KubeTestBed {
  readonly kube: KubeHandle;
  /** A namespace of the block's own, named after its prefix. */
  readonly namespace: TestNamespace;
  /** A folder of the block's own, for kubeconfigs and such. */
  readonly dir: string;
  /** The admin's connection to the API server, made when first asked for. */
  readonly transport: ClusterTransport;
  /** Another namespace, deleted with the rest after the block's tests. */
  createNamespace(prefix: string): Promise<TestNamespace>;
  /** `kubectl` as the admin in the block's namespace, as a user types it; what it printed on stdout. */
  kubectl(...args: string[]): Promise<string>;
}

export interface KubeTestBedOptions {
  /** Install kubeglue's CRDs first (default false). */
  crds?: boolean;
  /** Make the block's namespace (default true); blocks that make one per test say false. */
  namespace?: boolean;
}

/**
 * The set-up every describeKube block repeated: before its tests the control plane (with kubeglue's CRDs
 * when asked), a namespace and a folder of its own; after them, all of it removed. Call it first in the
 * block, so that the block's own hooks run after this set-up and before this tear-down.
 */
export function useKubeTestBed(prefix: string, options: KubeTestBedOptions = {}): KubeTestBed {
  let kube: KubeHandle | undefined;
  let namespace: TestNamespace | undefined;
  const others: TestNamespace[] = [];
  let dir: string | undefined;
  let transport: ClusterTransport | undefined;
  beforeAll(async () => {
    kube = requireKube();
    if (options.crds) await installCrds(kube);
    dir = await mkdtemp(join(tmpdir(), `kubeglue-${prefix}-`));
    if (options.namespace !== false) namespace = await createTestNamespace(kube, prefix);
  });
  afterAll(async () => {
    await transport?.close();
    await Promise.all([namespace, ...others].map((made) => made?.delete()));
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const made = <T>(value: T | undefined, what: string): T => {
    if (value === undefined)
      throw new Error(`the test bed's ${what} is made in beforeAll: use it in hooks and tests`);
    return value;
  };
  return {
    get kube() {
      return made(kube, 'control plane');
    },
    get namespace() {
      return made(namespace, 'namespace');
    },
    get dir() {
      return made(dir, 'folder');
    },
    get transport() {
      transport ??= new ClusterTransport(
        loadKubeConfig({ path: made(kube, 'control plane').kubeconfigPath }),
      );
      return transport;
    },
    async createNamespace(prefix) {
      const made = await createTestNamespace(this.kube, prefix);
      others.push(made);
      return made;
    },
    kubectl: async (...args) => {
      const config = made(kube, 'control plane').kubeconfigPath;
      const { name } = made(namespace, 'namespace');
      return (await exec('kubectl', ['--kubeconfig', config, '-n', name, ...args])).stdout;
    },
  };
}
