/**
 * `GET /v1/tools/{id}/manifest` answers what a GitOps repository keeps: this test takes it from a running
 * kubeglue, as YAML, and gives it to a real kube-apiserver with kubeglue's CRDs, which validates it with the
 * CRD's schema and rules exactly as `kubectl apply` would have it validated. The Tool it stores is the tool.
 */
import { expect, it } from 'vitest';
import { parse } from 'yaml';
import { toolFromResource } from '../../../contract/resources/convert.ts';
import { type ToolResource, ToolResource as ToolResourceSchema } from '../../../contract/resources/kinds.ts';
import { createClusterKubeglueResources } from '../../../kube/resources/index.ts';
import { useTestApi } from '../../support/embedded.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';

describeKube('a tool manifest applied to a real API server', () => {
  const bed = useKubeTestBed('tool-manifest', { crds: true });
  const api = useTestApi();

  it('is accepted as it is and stores the same tool', async () => {
    const definition = {
      id: 'Invoice Sync',
      name: 'Invoice sync',
      folder: 'billing/invoices',
      instruction: 'Copies invoices',
      inputSchema: {
        type: 'object',
        properties: { since: { type: 'string', description: 'ISO date' } },
        required: ['since'],
      },
      steps: [
        {
          id: 'fetch',
          config: { url: 'https://billing.example/invoices', queryParams: { since: '<<since>>' } },
        },
        { id: 'shape', config: { type: 'transform', transformCode: '(s) => {\n  return s.fetch.data;\n}' } },
      ],
      outputTransform: '(s) => s.shape',
    };
    const created = await api.call('POST', '/v1/tools', { body: definition });
    expect(created.status, created.text).toBe(201);
    const answer = await api.call<string>('GET', `/v1/tools/${encodeURIComponent(definition.id)}/manifest`, {
      headers: { accept: 'application/yaml' },
    });
    expect(answer.status).toBe(200);
    const manifest = parse(answer.text) as ToolResource;
    // The test's namespace stands for the one kubeglue watches.
    manifest.metadata.namespace = bed.namespace.name;

    const resources = createClusterKubeglueResources(bed.transport, bed.namespace.name);
    const stored = await resources.tools.create(manifest);
    const { createdAt: _c, updatedAt: _u, ...tool } = toolFromResource(ToolResourceSchema.parse(stored));
    const served = (
      await api.call<Record<string, unknown>>('GET', `/v1/tools/${encodeURIComponent(definition.id)}`)
    ).body;
    const { createdAt: _c2, updatedAt: _u2, ...expected } = served;
    expect(tool).toEqual(expected);
  });
});
