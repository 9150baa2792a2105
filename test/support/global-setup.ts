import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildUi } from '../../ui/build.ts';
import type { KubeConnection } from './kube/client.ts';
import { type ControlPlane, startControlPlane } from './kube/control-plane.ts';
import { startTestPostgres, type TestPostgres } from './postgres.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of the run's throwaway PostgreSQL server; make your own database with createTestDatabase. */
    databaseUrl: string;
    /**
     * The run's real kube-apiserver + etcd (+ controller-manager), or null without KUBEBUILDER_ASSETS.
     * Use test/support/kube/provided.ts rather than reading this directly.
     */
    kube: KubeConnection | null;
  }
}

/**
 * One PostgreSQL server and, when KUBEBUILDER_ASSETS has the binaries, one Kubernetes control plane for the
 * whole run; and the dashboard built into dist/ui, which every server the tests start serves at `/` (the
 * tests run the .ts sources, which `npm run build` never compiled).
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
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (!assets || !existsSync(join(assets, 'kube-apiserver'))) {
    if (process.env.CI === 'true') {
      throw new Error(
        `KUBEBUILDER_ASSETS must point at etcd and kube-apiserver; .ci/run builds them (KUBEBUILDER_ASSETS=${assets ?? 'unset'})`,
      );
    }
    return undefined;
  }
  return startControlPlane({ assetsDir: assets });
}
