import { expect, it } from 'vitest';
import { useTestDatabase } from '../../support/database.ts';
import { callApi, TEST_ADMIN_KEY } from '../../support/embedded.ts';
import { grantKubeglueRoles, startApi, waitUntil } from '../../support/kube/kubeglue.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';

/**
 * KUBEGLUE_SHUTDOWN_DELAY_MS (the chart's api.shutdownDelayMs): after SIGTERM the api reports not
 * ready but keeps answering for the delay, so a rollout's endpoints drain before it stops listening
 * (proven under a real rollout by test/e2e/chart.test.ts).
 */
describeKube('the api shutdown delay', () => {
  const bed = useKubeTestBed('api-shutdown-delay', { crds: true });
  const db = useTestDatabase();

  it('answers requests, with /readyz 503, for the delay after SIGTERM, then exits', async () => {
    await grantKubeglueRoles(bed.kube, bed.namespace.name);
    const api = await startApi(bed, db.url, { KUBEGLUE_SHUTDOWN_DELAY_MS: '3000' });
    const { url } = api;
    try {
      await api.waitForOutput(/ready on/);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      api.child.kill('SIGTERM');
      await waitUntil(async () => (await fetch(`${url}/readyz`)).status === 503, 2000, '/readyz to fail');
      // Still serving while not ready: requests a Service routes here meanwhile are answered.
      const tools = await callApi(url, TEST_ADMIN_KEY, 'GET', '/v1/tools');
      expect(tools.status).toBe(200);
      expect(api.child.exitCode).toBeNull();
      expect(await api.exited).toBe(0);
      await expect(fetch(`${url}/readyz`)).rejects.toThrow();
    } finally {
      await api.stop('SIGKILL');
    }
  }, 60_000);
});
