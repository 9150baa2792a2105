import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { MAX_INSTRUCTION_LENGTH } from '../../../contract/api/tool.ts';
import { PLAIN_MANIFESTS } from '../../../contract/generate.ts';
import { API_VERSION } from '../../../contract/resources/meta.ts';
import { REPO } from '../../support/helm.ts';
import { type ControlPlane, startControlPlane } from '../../support/kube/control-plane.ts';
import { describeKube } from '../../support/kube/provided.ts';

const exec = promisify(execFile);

/**
 * The install commands docs/kubernetes.md gives for kubectl users, as written: a current kubectl (client-side
 * apply, which validates every object against the server's own schema) against the oldest server the chart
 * supports (v1.20, which knows no CEL `x-kubernetes-validations` and no policy/v1). CRDs and the namespace
 * `kubeglue` are cluster-wide, so this file has a control plane of its own; no kubelet, the objects are the
 * point.
 */
describeKube('kubectl apply of the CRDs and deploy/kubeglue.yaml on a v1.20 server', () => {
  let kube: ControlPlane;
  // From the checkout's root, where the documentation's commands run.
  const kubectl = async (...args: string[]) => {
    const { stdout, stderr } = await exec('kubectl', ['--kubeconfig', kube.kubeconfigPath, ...args], {
      cwd: REPO,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { stdout, stderr };
  };

  beforeAll(async () => {
    expect(inject('kube')).not.toBeNull();
    kube = await startControlPlane({ controllerManager: false });
  }, 120_000);

  afterAll(async () => {
    await kube?.stop();
  });

  it('the server is the oldest version the chart supports', async () => {
    const version = JSON.parse((await kubectl('version', '-o', 'json')).stdout) as {
      serverVersion: { major: string; minor: string };
    };
    expect(`${version.serverVersion.major}.${version.serverVersion.minor}`).toBe('1.20');
  });

  it('kubectl apply -f crds/ succeeds, and again (an upgrade)', async () => {
    const page = await readFile(join(REPO, 'docs', 'kubernetes.md'), 'utf8');
    expect(page).toContain('kubectl apply -f crds/\n');
    for (let round = 0; round < 2; round++) {
      const { stdout, stderr } = await kubectl('apply', '--server-side=false', '-f', 'crds/');
      expect(stderr).not.toMatch(/unknown field|error/i);
      expect(stdout).toMatch(
        /customresourcedefinition\.apiextensions\.k8s\.io\/tools\.kubeglue\.dev (created|configured|unchanged)/,
      );
    }
    const { stdout } = await kubectl('get', 'crd', '-o', 'name');
    expect(
      stdout
        .split('\n')
        .filter((line) => line.endsWith('.kubeglue.dev'))
        .sort(),
    ).toEqual([
      'customresourcedefinition.apiextensions.k8s.io/systems.kubeglue.dev',
      'customresourcedefinition.apiextensions.k8s.io/toolruns.kubeglue.dev',
      'customresourcedefinition.apiextensions.k8s.io/tools.kubeglue.dev',
      'customresourcedefinition.apiextensions.k8s.io/toolschedules.kubeglue.dev',
    ]);
  });

  it('the CRDs refuse what the API refuses: a documentationUrl of another scheme, a tool instruction too long', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kubeglue-crd-bounds-'));
    const apply = async (name: string, manifest: object) => {
      const file = join(dir, `${name}.json`);
      await writeFile(file, JSON.stringify(manifest));
      return kubectl('apply', '--server-side=false', '-n', 'default', '-f', file).then(
        () => '',
        (error: { stderr?: string }) => error.stderr ?? String(error),
      );
    };
    const system = (documentationUrl: string) => ({
      apiVersion: API_VERSION,
      kind: 'System',
      metadata: { name: 'crm-prod' },
      spec: { id: 'crm', url: 'https://crm.example', documentationUrl },
    });
    const tool = (instruction: string) => ({
      apiVersion: API_VERSION,
      kind: 'Tool',
      metadata: { name: 'orders' },
      spec: { instruction, steps: [{ id: 'k', config: { type: 'transform', transformCode: '() => 1' } }] },
    });
    try {
      expect(await apply('system-js', system('javascript:alert(document.domain)'))).toMatch(
        /spec\.documentationUrl.*should match/,
      );
      const tooLong = await apply('tool-long', tool('x'.repeat(MAX_INSTRUCTION_LENGTH + 1)));
      // The server quotes the value; what it says of it comes after.
      expect(tooLong).toContain('spec.instruction');
      expect(tooLong.slice(tooLong.lastIndexOf('x') + 1)).toMatch(/10000/);
      expect(await apply('system-ok', system('https://crm.example/openapi.json'))).toBe('');
      expect(await apply('tool-ok', tool('x'.repeat(MAX_INSTRUCTION_LENGTH)))).toBe('');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('kubectl apply -f deploy/kubeglue.yaml succeeds, as its header says to run it', async () => {
    await kubectl('create', 'namespace', 'kubeglue');
    const { stdout, stderr } = await kubectl(
      'apply',
      '--server-side=false',
      '-f',
      join(REPO, PLAIN_MANIFESTS),
    );
    expect(stderr).not.toMatch(/unknown field|error/i);
    for (const made of [
      'deployment.apps/kubeglue-api',
      'deployment.apps/kubeglue-operator',
      'role.rbac.authorization.k8s.io/kubeglue-operator',
    ]) {
      expect(stdout).toContain(made);
    }
    const { stdout: deployments } = await kubectl('-n', 'kubeglue', 'get', 'deployments', '-o', 'name');
    expect(deployments.trim().split('\n').sort()).toEqual([
      'deployment.apps/kubeglue-api',
      'deployment.apps/kubeglue-operator',
    ]);
  });

  // The REST API refuses them too (test/integration/api/control-characters.test.ts): one rule,
  // contract/text.ts, which the CRDs carry as a pattern.
  it('refuses a Tool, System or ToolSchedule holding control characters in a name, an id or a cron expression', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kubeglue-crd-'));
    const apply = async (name: string, object: object) => {
      const path = join(dir, `${name}.json`);
      await writeFile(path, JSON.stringify({ apiVersion: 'kubeglue.dev/v1alpha1', ...object }));
      return exec('kubectl', [
        '--kubeconfig',
        kube.kubeconfigPath,
        '-n',
        'default',
        'apply',
        '-f',
        path,
      ]).then(
        () => '',
        (error: { stderr: string }) => error.stderr,
      );
    };
    const step = { id: 'get', config: { url: 'http://127.0.0.1:9/x' } };
    const tool = (spec: object) => ({
      kind: 'Tool',
      metadata: { name: 'named' },
      spec: { steps: [step], ...spec },
    });
    try {
      expect(await apply('clean', tool({ name: 'Named', instruction: 'Reads.\n\tThen keeps.' }))).toBe('');
      expect(await apply('name', tool({ name: 'evil\x1b]52;c;cHduZWQ=\x07' }))).toMatch(
        /spec\.name.*should match/,
      );
      // A bidi override (Trojan Source): the pattern holds it as itself, which RE2 reads.
      expect(await apply('bidi', tool({ name: 'evil\u202etxt.exe' }))).toMatch(/spec\.name.*should match/);
      expect(await apply('instruction', tool({ instruction: 'evil\x9b2J' }))).toMatch(
        /spec\.instruction.*should match/,
      );
      expect(
        await apply('id', {
          kind: 'Tool',
          metadata: { name: 'with-id' },
          spec: { id: 'evil\x1b[2J', steps: [step] },
        }),
      ).toMatch(/spec\.id.*should match/);
      expect(
        await apply('system', {
          kind: 'System',
          metadata: { name: 'named-system' },
          spec: { id: 'named_system', url: 'http://127.0.0.1:9', name: 'evil\x7f' },
        }),
      ).toMatch(/spec\.name.*should match/);
      expect(
        await apply('schedule', {
          kind: 'ToolSchedule',
          metadata: { name: 'nightly' },
          spec: { toolId: 'named', schedule: '\x1b[2J * * * *' },
        }),
      ).toMatch(/spec\.schedule.*should match/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
