/**
 * The step data bound (KUBEGLUE_MAX_STEP_DATA_BYTES) reaches a MySQL step run by the worker pool: rows are
 * counted as they stream in, and past the bound the statement is stopped on the server instead of the
 * whole answer being read and then refused.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Run } from '../../../contract/api/run.ts';
import { useTestApi } from '../../support/embedded.ts';
import { mariadbSkip, useMariaDb } from '../../support/mariadb.ts';

describe.skipIf(mariadbSkip())('a MySQL step past the step data bound', () => {
  const api = useTestApi({ KUBEGLUE_MAX_STEP_DATA_BYTES: '20000' });
  const database = useMariaDb();

  beforeAll(async () => {
    const system = await api.call('POST', '/v1/systems', {
      body: {
        id: 'shop',
        url: database.bareUrl,
        authType: 'dataStore',
        credentials: { username: database.user, password: database.password },
      },
    });
    expect(system.status, system.text).toBe(201);
    const rows = (count: number) =>
      `WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count}) SELECT i, REPEAT('x', 100) AS pad FROM n`;
    for (const [id, count] of [
      ['many-rows', 100_000],
      ['few-rows', 10],
    ] as const) {
      const tool = await api.call('POST', '/v1/tools', {
        body: { id, steps: [{ id: 'rows', config: { url: '/', systemId: 'shop', body: rows(count) } }] },
      });
      expect(tool.status, tool.text).toBe(201);
    }
  });

  it('fails the run naming the bound and stops the statement, and smaller answers pass', async () => {
    const failed = (await api.call<Run>('POST', '/v1/tools/many-rows/run', { body: {} })).body;
    expect(failed.status).toBe('failed');
    expect(failed.error).toContain("Step rows failed: the step's data (the rows so far) is");
    expect(failed.error).toContain('more than the limit of 20000 bytes (KUBEGLUE_MAX_STEP_DATA_BYTES)');
    expect(failed.error).toContain('the statement was stopped');
    const passed = (await api.call<Run>('POST', '/v1/tools/few-rows/run', { body: {} })).body;
    expect(passed.status, passed.error).toBe('success');
    expect(passed.stepResults?.[0]?.data).toHaveLength(10);
  });
});
