import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The discovery endpoints kubectl reads before it maps a manifest to a resource: enough for
 * `kubectl create --dry-run=client` of CustomResourceDefinitions.
 */
export async function startDiscoveryServer(): Promise<{ url: string; stop(): Promise<void> }> {
  const documents: Record<string, unknown> = {
    '/version': { major: '1', minor: '32', gitVersion: 'v1.32.0' },
    '/api': { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] },
    '/api/v1': { kind: 'APIResourceList', groupVersion: 'v1', resources: [] },
    '/apis': {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [
        {
          name: 'apiextensions.k8s.io',
          versions: [{ groupVersion: 'apiextensions.k8s.io/v1', version: 'v1' }],
          preferredVersion: { groupVersion: 'apiextensions.k8s.io/v1', version: 'v1' },
        },
      ],
    },
    '/apis/apiextensions.k8s.io/v1': {
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: 'apiextensions.k8s.io/v1',
      resources: [
        {
          name: 'customresourcedefinitions',
          singularName: 'customresourcedefinition',
          namespaced: false,
          kind: 'CustomResourceDefinition',
          verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
        },
      ],
    },
  };
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const body = documents[path];
    res.setHeader('content-type', 'application/json');
    if (body === undefined) {
      res.statusCode = 404;
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'NotFound',
          code: 404,
        }),
      );
      return;
    }
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
