import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { CHART_DIR, find, helm, parseObjects } from '../../support/helm.ts';

/**
 * kubeglue as a subchart of an umbrella chart, as platform teams package it: Helm hands every subchart
 * the umbrella's `global` values, which the values schema must accept.
 */
describe('the chart as a subchart of an umbrella chart', () => {
  let umbrella: string;

  beforeAll(async () => {
    umbrella = await mkdtemp(join(tmpdir(), 'kubeglue-umbrella-'));
    const { version } = parse(await readFile(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { version: string };
    await writeFile(
      join(umbrella, 'Chart.yaml'),
      stringify({
        apiVersion: 'v2',
        name: 'platform',
        version: '1.0.0',
        dependencies: [{ name: 'kubeglue', version, repository: `file://${CHART_DIR}` }],
      }),
    );
    await writeFile(
      join(umbrella, 'values.yaml'),
      stringify({
        global: { imageRegistry: 'registry.example.com', imagePullSecrets: ['shared'], storageClass: 'fast' },
        kubeglue: { api: { replicas: 3 } },
      }),
    );
    // What `helm dependency build` would unpack: the chart under charts/.
    await cp(CHART_DIR, join(umbrella, 'charts', 'kubeglue'), { recursive: true });
  });

  afterAll(async () => {
    await rm(umbrella, { recursive: true, force: true });
  });

  it('renders with the umbrella global values, and the umbrella values reach kubeglue', async () => {
    const objects = parseObjects(await helm(['template', 'platform', umbrella, '--namespace', 'platform']));
    const api = find(objects, 'Deployment', 'platform-kubeglue-api');
    expect((api.spec as { replicas: number }).replicas).toBe(3);
    await expect(helm(['lint', umbrella])).resolves.toMatch(/0 chart\(s\) failed/);
  });

  it('still refuses an unknown kubeglue value given through the umbrella', async () => {
    await expect(helm(['template', 'platform', umbrella, '--set', 'kubeglue.api.replica=3'])).rejects.toThrow(
      /Additional property replica is not allowed/,
    );
  });
});
