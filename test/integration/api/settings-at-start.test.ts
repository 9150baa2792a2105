/**
 * A started role reports the KUBEGLUE_* variables no setting declares, and stops at once on an invalid
 * value, naming the variable.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LOG_LEVELS } from '../../../contract/log.ts';
import { startKubeglue } from '../../support/kube/kubeglue.ts';
import { logLines } from '../../support/log-lines.ts';

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('settings at start', () => {
  it('kubeglue embedded warns about a misspelt variable and starts', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'kubeglue-settings-'));
    dirs.push(dataDir);
    const embedded = startKubeglue('embedded', {
      KUBEGLUE_DATA_DIR: dataDir,
      KUBEGLUE_PORT: '0',
      KUBEGLUE_WORKERS: '1',
      KUBEGLUE_LOG_LEVEL: 'silent',
      KUBEGLUE_SANDBOX_MEMROY_MB: '64',
      // The operator's: one environment may serve several roles, so it passes silently.
      KUBEGLUE_RUNNER_IMAGE: 'registry.example/kubeglue:1',
    });
    try {
      await embedded.waitForOutput(/ready on http/);
      expect(logLines(embedded.output())).toContainEqual(
        expect.objectContaining({
          level: LOG_LEVELS.warn,
          role: 'embedded',
          msg: 'KUBEGLUE_SANDBOX_MEMROY_MB is not a kubeglue setting (did you mean KUBEGLUE_SANDBOX_MEMORY_MB?); it is ignored',
        }),
      );
      expect(embedded.output()).not.toContain('KUBEGLUE_RUNNER_IMAGE');
    } finally {
      await embedded.stop();
    }
  });

  it('kubeglue operator stops at once on an invalid value, naming the variable', async () => {
    const operator = startKubeglue('operator', { KUBEGLUE_LEASE_DURATION_MS: 'soon' });
    expect(await operator.exited).toBe(1);
    const [fatal] = logLines(operator.output()).filter((line) => line.level === LOG_LEVELS.fatal);
    expect(fatal).toMatchObject({ role: 'operator' });
    expect(fatal?.msg).toMatch(/^invalid configuration: KUBEGLUE_LEASE_DURATION_MS: /);
  });
});
