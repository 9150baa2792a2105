import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { PLAIN_MANIFESTS } from '../../../contract/generate.ts';
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
});
