import type { TestProject } from 'vitest/node';
import { buildUi } from '../../ui/build.ts';
import type { KubeConnection } from './kube/client.ts';
import { type ControlPlane, startControlPlane } from './kube/control-plane.ts';
import { startTestPostgres, type TestPostgres } from './postgres.ts';
import { kubeAssets, skipReason } from './prerequisites.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of the run's throwaway PostgreSQL server; make your own database with createTestDatabase. */
    databaseUrl: string;
    /**
     * The run's real kube-apiserver + etcd (+ controller-manager), or null without one (prerequisites.ts).
     * Use test/support/kube/provided.ts rather than reading this directly.
     */
    kube: KubeConnection | null;
  }
}

/**
 * One PostgreSQL server and, when its binaries are there (KUBEBUILDER_ASSETS, or the cache npm test builds),
 * one Kubernetes control plane for the whole run; and the dashboard built into dist/ui, which every server
 * the tests start serves at `/` (the tests run the .ts sources, which `npm run build` never compiled).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [postgres, kube, ui] = await Promise.allSettled([startTestPostgres(), startKube(), buildUi()]);
  const started = [postgres, kube].flatMap((result) =>
    result.status === 'fulfilled' && result.value ? [result.value] : [],
  );
  const stopAll = async () => {
    await Promise.all(started.map((server) => server.stop()));
  };
  if (postgres.status === 'rejected' || kube.status === 'rejected' || ui.status === 'rejected') {
    await stopAll();
    throw ([postgres, kube, ui].find((result) => result.status === 'rejected') as PromiseRejectedResult)
      .reason;
  }
  project.provide('databaseUrl', (postgres.value as TestPostgres).url);
  project.provide('kube', kube.value?.connection ?? null);
  return stopAll;
}

async function startKube(): Promise<ControlPlane | undefined> {
  const assets = kubeAssets();
  if (!assets) {
    // Skipped, with the reason in the run's report; an error under CI=true.
    skipReason('kube');
    return undefined;
  }
  return startControlPlane({ assetsDir: assets });
}
