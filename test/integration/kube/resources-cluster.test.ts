import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  ClusterTransport,
  COORDINATION_KIND_SPECS,
  createClusterResources,
  KUBEGLUE_KIND_SPECS,
  POD_KIND,
  SECRET_KIND,
} from '../../../kube/resources/index.ts';
import type { Pod, Secret } from '../../../kube/types.ts';
import { roleTransport } from '../../support/kube/kubeglue.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';
import {
  type ContractKinds,
  type ContractNamespace,
  describeResourcesContract,
  failure,
  tool,
} from '../../support/resources-contract.ts';

describeKube('cluster resources on a real API server', () => {
  const bed = useKubeTestBed('resources-cluster', { crds: true, namespace: false });

  async function open(prefix: string): Promise<ContractNamespace> {
    const namespace = await bed.createNamespace(prefix);
    const resources = createClusterResources<ContractKinds>(bed.transport, {
      namespace: namespace.name,
      kinds: { ...KUBEGLUE_KIND_SPECS, ...COORDINATION_KIND_SPECS },
    });
    return { name: namespace.name, resources };
  }

  describeResourcesContract(() => ({
    open,
    // The watch cache starts at the CRD's first list: "1" is far older than anything it holds.
    expiredVersion: async () => '1',
    garbageCollection: bed.kube.controllerManager ? 'eventual' : 'none',
  }));

  describe('specific to the API server', () => {
    it('passes on the API server’s own validation messages', async () => {
      const { resources } = await open('wording');
      const error = await failure(resources.tools.create(tool('no-steps', {}, [])));
      expect(error.code).toBe(422);
      expect(error.message).toMatch(
        /^Tool\.kubeglue\.dev "no-steps" is invalid: spec\.steps: Invalid value: \d+: spec\.steps in body should have at least 1 items$/,
      );
    });

    it('follows continue tokens through many pages', async () => {
      const { resources } = await open('pages');
      const created = await Promise.all(
        Array.from({ length: 23 }, (_, i) =>
          resources.leases.create({
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name: `lease-${String(i).padStart(2, '0')}` },
            spec: { holderIdentity: `h${i}` },
          }),
        ),
      );
      const listed = await resources.leases.list({ pageSize: 5 });
      expect(listed.items.map((item) => item.metadata.name)).toEqual(
        created.map((item) => item.metadata.name).sort(),
      );
      expect(
        listed.items.every((item) => item.kind === 'Lease' && item.apiVersion === 'coordination.k8s.io/v1'),
      ).toBe(true);
    });

    it('reads and writes Secrets and Pods in their wire form', async () => {
      const namespace = await bed.createNamespace('core');
      const core = createClusterResources<{ secrets: Secret; pods: Pod }>(bed.transport, {
        namespace: namespace.name,
        kinds: { secrets: SECRET_KIND, pods: POD_KIND },
      });
      const secret = await core.secrets.create({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'token' },
        type: 'Opaque',
        stringData: { token: 'abc' },
      });
      expect(secret.data).toEqual({ token: Buffer.from('abc').toString('base64') });
      const pod = await core.pods.create({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'runner', labels: { app: 'kubeglue-runner' } },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          containers: [{ name: 'runner', image: 'registry.invalid/runner:0', args: ['run'] }],
        },
      });
      expect(pod.spec.containers[0]?.name).toBe('runner');
      expect(pod.status?.phase).toBe('Pending');
      const listed = await core.pods.list({ labelSelector: { app: 'kubeglue-runner' } });
      expect(listed.items.map((item) => item.metadata.name)).toEqual(['runner']);
      await core.pods.delete('runner', { gracePeriodSeconds: 0 });
      await expect.poll(() => core.pods.get('runner'), { timeout: 20_000 }).toBeUndefined();
      expect((await failure(core.pods.patchStatus('runner', { phase: 'Failed' }))).code).toBe(404);
    });

    it('refuses Unauthorized and Forbidden with their reasons', async () => {
      const { name } = await open('auth');
      const bad = await roleTransport(bed, 'api');
      try {
        const forbidden = createClusterResources<ContractKinds>(bad, {
          namespace: name,
          kinds: { ...KUBEGLUE_KIND_SPECS, ...COORDINATION_KIND_SPECS },
        });
        const error = await failure(forbidden.tools.list());
        expect([error.code, error.reason]).toEqual([403, 'Forbidden']);
      } finally {
        await bad.close();
      }
      const stranger = new KubeConfig();
      stranger.loadFromClusterAndUser(
        {
          name: 'test',
          server: bed.kube.url,
          caData: Buffer.from(bed.kube.caPem).toString('base64'),
          skipTLSVerify: false,
        },
        { name: 'stranger', token: 'not-a-token' },
      );
      const unknown = new ClusterTransport(stranger);
      try {
        const clients = createClusterResources<ContractKinds>(unknown, {
          namespace: name,
          kinds: { ...KUBEGLUE_KIND_SPECS, ...COORDINATION_KIND_SPECS },
        });
        const error = await failure(clients.tools.get('x'));
        expect([error.code, error.reason]).toEqual([401, 'Unauthorized']);
      } finally {
        await unknown.close();
      }
    });
  });
});
