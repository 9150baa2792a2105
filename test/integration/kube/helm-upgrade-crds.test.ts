import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { CHART_CRD_DIR, CRD_DIR } from '../../../contract/generate.ts';
import { CHART_DIR, HelmError, helm, helmEnv, REPO } from '../../support/helm.ts';
import { type ControlPlane, startControlPlane } from '../../support/kube/control-plane.ts';
import { waitUntil } from '../../support/kube/kubeglue.ts';
import { describeKube } from '../../support/kube/provided.ts';

const exec = promisify(execFile);
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
type Node = Record<string, unknown>;

/** The ```sh block of docs/helm.md's Upgrading section. */
async function documentedUpgrade(): Promise<string> {
  const page = await readFile(join(REPO, 'docs', 'helm.md'), 'utf8');
  const section = page.slice(page.indexOf('\n## Upgrading\n'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('docs/helm.md: no command block under Upgrading');
  return block;
}

/**
 * `helm upgrade` from a chart of before templates/crds.yaml, which installed the CRDs from Helm's crds/
 * directory (never upgraded) and had no ToolSchedule yet. CRDs are cluster-wide, so this test has a
 * control plane of its own: the other test files' CRDs stay untouched. No kubelet: the CRDs are the
 * point, not the Pods.
 */
describeKube('helm upgrade of the CRDs', () => {
  let kube: ControlPlane;
  let dir: string;
  let oldChart: string;
  const helmCli = (...args: string[]) =>
    helm([...args, '--namespace', 'kubeglue'], { kubeconfig: kube.kubeconfigPath, timeoutMs: 120_000 });
  const crd = async (plural: string) => await kube.request(`${CRDS}/${plural}.kubeglue.dev`);

  beforeAll(async () => {
    // Its own: the suite's control plane (inject('kube')) serves the other files at the same time.
    expect(inject('kube')).not.toBeNull();
    kube = await startControlPlane({ controllerManager: false });
    dir = await mkdtemp(join(tmpdir(), 'kubeglue-crd-upgrade-'));
    // The earlier chart: CRDs in crds/ (Tool, System, ToolRun), none rendered by a template.
    oldChart = join(dir, 'kubeglue');
    await cp(CHART_DIR, oldChart, { recursive: true });
    await rm(join(oldChart, 'templates', 'crds.yaml'));
    await mkdir(join(oldChart, 'crds'));
    for (const plural of ['tools', 'systems', 'toolruns']) {
      const file = `kubeglue.dev_${plural}.yaml`;
      await cp(join(REPO, CRD_DIR, file), join(oldChart, 'crds', file));
    }
    await kube.request('/api/v1/namespaces', {
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kubeglue' } },
    });
    await helmCli('install', 'kubeglue', oldChart);
  }, 120_000);

  afterAll(async () => {
    await kube?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('starts from a release without the ToolSchedule CRD, whose CRDs Helm does not own', async () => {
    expect((await crd('toolschedules')).status).toBe(404);
    const tools = await crd('tools');
    expect(tools.status).toBe(200);
    expect((tools.body as { metadata: { annotations?: Node } }).metadata.annotations).toBeUndefined();
  });

  it('refuses the upgrade with a message naming the CRD until they are handed over', async () => {
    const refused = await helmCli('upgrade', 'kubeglue', CHART_DIR).catch((error: HelmError) => error);
    expect(refused).toBeInstanceOf(HelmError);
    expect((refused as HelmError).stderr).toMatch(
      /CustomResourceDefinition "\w+\.kubeglue\.dev" .*exists and cannot be imported into the current release: invalid ownership metadata/,
    );
  });

  it('creates the ToolSchedule CRD and takes over the others after the documented step', async () => {
    await exec('sh', ['-ec', await documentedUpgrade()], {
      cwd: REPO,
      env: helmEnv(kube.kubeconfigPath),
      timeout: 120_000,
    });
    await waitUntil(
      async () => {
        const got = await crd('toolschedules');
        const conditions = (got.body as { status?: { conditions?: Node[] } }).status?.conditions ?? [];
        return conditions.some((c) => c.type === 'Established' && c.status === 'True');
      },
      30_000,
      'the ToolSchedule CRD to be served',
    );
    expect((await kube.request('/apis/kubeglue.dev/v1alpha1/toolschedules')).status).toBe(200);
    for (const plural of ['tools', 'systems', 'toolruns', 'toolschedules']) {
      const { metadata } = (await crd(plural)).body as { metadata: { annotations?: Node; labels?: Node } };
      expect(metadata.annotations).toMatchObject({
        'meta.helm.sh/release-name': 'kubeglue',
        'meta.helm.sh/release-namespace': 'kubeglue',
        'helm.sh/resource-policy': 'keep',
      });
      expect(metadata.labels?.['app.kubernetes.io/managed-by']).toBe('Helm');
    }
  });

  it('updates a CRD that changed in the chart on the next helm upgrade', async () => {
    const newer = join(dir, 'newer');
    await cp(CHART_DIR, newer, { recursive: true });
    const file = join(newer, CHART_CRD_DIR.replace(/^charts\/kubeglue\//, ''), 'kubeglue.dev_tools.yaml');
    const changed = parse(await readFile(file, 'utf8')) as {
      spec: { versions: { additionalPrinterColumns: Node[] }[] };
    };
    changed.spec.versions[0]?.additionalPrinterColumns.push({
      name: 'Owner',
      type: 'string',
      jsonPath: '.metadata.labels.owner',
    });
    await writeFile(file, stringify(changed));
    await helmCli('upgrade', 'kubeglue', newer);
    const { spec } = (await crd('tools')).body as {
      spec: { versions: { additionalPrinterColumns: Node[] }[] };
    };
    expect(spec.versions[0]?.additionalPrinterColumns.map((column) => column.name)).toContain('Owner');
  });

  it('keeps the CRDs, and so every Tool, on helm uninstall', async () => {
    await helmCli('uninstall', 'kubeglue');
    for (const plural of ['tools', 'systems', 'toolruns', 'toolschedules'])
      expect((await crd(plural)).status).toBe(200);
  });
});
