import { describe, inject } from 'vitest';
import { type KubeHandle, kubeHandle } from './client.ts';

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
