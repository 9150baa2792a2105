import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClusterTransport, createClusterResources, LEASE_KIND } from '../../../kube/resources/index.ts';
import type { Lease } from '../../../kube/types.ts';
import { failure } from '../../support/resources-contract.ts';

/**
 * The cluster client against a scripted stand-in for the API server: the answers a real one gives rarely
 * (5xx, throttling, expired continue tokens, odd watch framing, malformed objects) on demand.
 */

interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  contentType: string | undefined;
  body: unknown;
}

type Handler = (req: Seen, res: ServerResponse) => void;

let server: Server;
let url: string;
let handler: Handler;
const seen: Seen[] = [];

const PATH = '/apis/coordination.k8s.io/v1/namespaces/ns/leases';

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function status(code: number, reason: string, message = reason) {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message, metadata: {} };
}

function wireLease(name: string, resourceVersion = '1') {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name,
      namespace: 'ns',
      resourceVersion,
      uid: `uid-${name}`,
      managedFields: [{ manager: 'kubectl', operation: 'Update' }],
    },
    spec: { holderIdentity: 'x' },
  };
}

function clients(options: ConstructorParameters<typeof ClusterTransport>[1] = {}) {
  const config = new KubeConfig();
  config.loadFromClusterAndUser(
    { name: 'fake', server: url, skipTLSVerify: true },
    { name: 'user', token: 'secret-token' },
  );
  const transport = new ClusterTransport(config, { maxRetryDelayMs: 50, ...options });
  return {
    transport,
    leases: createClusterResources<{ leases: Lease }>(transport, {
      namespace: 'ns',
      kinds: { leases: LEASE_KIND },
      pageSize: 2,
    }).leases,
  };
}

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const parsed = new URL(req.url ?? '/', 'http://x');
      const text = Buffer.concat(chunks).toString();
      const entry: Seen = {
        method: req.method ?? '',
        path: parsed.pathname,
        query: parsed.searchParams,
        contentType: req.headers['content-type'],
        body: text ? JSON.parse(text) : undefined,
      };
      seen.push(entry);
      if (req.headers.authorization !== 'Bearer secret-token')
        return json(res, 401, status(401, 'Unauthorized'));
      handler(entry, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

afterEach(() => {
  seen.length = 0;
});

describe('the cluster client against a scripted API server', () => {
  it('retries reads answered 5xx, but never a write', async () => {
    let failures = 2;
    handler = (_req, res) => {
      if (failures-- > 0) return json(res, 503, status(503, 'ServiceUnavailable'));
      json(res, 200, wireLease('a'));
    };
    const { leases, transport } = clients();
    expect((await leases.get('a'))?.metadata.name).toBe('a');
    expect(seen).toHaveLength(3);

    seen.length = 0;
    handler = (_req, res) => json(res, 500, status(500, 'InternalError', 'etcd is sad'));
    const error = await failure(
      leases.create({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'b' },
        spec: {},
      }),
    );
    expect([error.code, error.reason, error.message]).toEqual([500, 'InternalError', 'etcd is sad']);
    expect(seen).toHaveLength(1);
    await transport.close();
  });

  it('retries any request answered 429, waiting as Retry-After says', async () => {
    let throttled = 1;
    handler = (_req, res) => {
      if (throttled-- > 0) return json(res, 429, status(429, 'TooManyRequests'), { 'retry-after': '0' });
      json(res, 201, wireLease('c'));
    };
    const { leases, transport } = clients();
    const created = await leases.create({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'c' },
      spec: {},
    });
    expect(created.metadata.name).toBe('c');
    expect(seen.map((r) => r.method)).toEqual(['POST', 'POST']);
    await transport.close();
  });

  it('maps answers without a Status onto reasons by HTTP code', async () => {
    handler = (_req, res) => {
      res.writeHead(403, { 'content-type': 'text/plain' });
      res.end('go away');
    };
    const { leases, transport } = clients();
    const error = await failure(leases.list());
    expect([error.code, error.reason, error.message]).toEqual([403, 'Forbidden', 'HTTP 403: go away']);
    await transport.close();
  });

  it('sends merge patches with their content type, preconditions in the body, deletes in the background', async () => {
    handler = (req, res) => json(res, 200, req.method === 'DELETE' ? status(200, '') : wireLease('p', '7'));
    const { leases, transport } = clients();
    await leases.patch('p', { spec: { holderIdentity: 'me' } }, { resourceVersion: '6' });
    await leases.patchStatus('p', {} as never, { resourceVersion: '7' });
    await leases.delete('p', { gracePeriodSeconds: 0, preconditions: { uid: 'uid-p' } });
    expect(seen.map((r) => [r.method, r.path, r.contentType])).toEqual([
      ['PATCH', `${PATH}/p`, 'application/merge-patch+json'],
      ['PATCH', `${PATH}/p/status`, 'application/merge-patch+json'],
      ['DELETE', `${PATH}/p`, 'application/json'],
    ]);
    expect(seen[0]?.body).toEqual({ spec: { holderIdentity: 'me' }, metadata: { resourceVersion: '6' } });
    expect(seen[1]?.body).toEqual({ status: {}, metadata: { resourceVersion: '7' } });
    expect(seen[2]?.body).toEqual({
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      propagationPolicy: 'Background',
      gracePeriodSeconds: 0,
      preconditions: { uid: 'uid-p' },
    });
    expect(seen.every((r) => r.method === 'DELETE' || r.query.get('fieldManager') === 'kubeglue')).toBe(true);
    await transport.close();
  });

  it('follows continue tokens, and lists whole again when a token has expired', async () => {
    const page = (names: string[], next?: string) => ({
      kind: 'LeaseList',
      apiVersion: 'coordination.k8s.io/v1',
      metadata: { resourceVersion: '100', ...(next ? { continue: next } : {}) },
      // List items come without apiVersion and kind.
      items: names.map((name) => {
        const { apiVersion: _a, kind: _k, ...item } = wireLease(name);
        return item;
      }),
    });
    handler = (req, res) => {
      const token = req.query.get('continue');
      if (!req.query.get('limit')) return json(res, 200, page(['a', 'b', 'c', 'd']));
      if (!token) return json(res, 200, page(['a', 'b'], 'next-1'));
      if (token === 'next-1')
        return json(res, 410, status(410, 'Expired', 'The provided continue parameter is too old'));
    };
    const { leases, transport } = clients();
    const listed = await leases.list({ labelSelector: { app: 'x', tier: 'y' } });
    expect(listed.items.map((item) => item.metadata.name)).toEqual(['a', 'b', 'c', 'd']);
    expect(listed.resourceVersion).toBe('100');
    expect(listed.items[0]).toMatchObject({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' });
    expect(listed.items[0]?.metadata).not.toHaveProperty('managedFields');
    expect(seen.map((r) => [r.query.get('limit'), r.query.get('continue')])).toEqual([
      ['2', null],
      ['2', 'next-1'],
      [null, null],
    ]);
    expect(seen.every((r) => r.query.get('labelSelector') === 'app=x,tier=y')).toBe(true);
    await transport.close();
  });

  describe('watch', () => {
    function streaming(lines: string[], pauseMs = 5): Handler {
      return (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        let i = 0;
        const next = () => {
          if (i >= lines.length) return res.end();
          res.write(lines[i++]);
          setTimeout(next, pauseMs);
        };
        next();
      };
    }

    const event = (type: string, object: unknown) => `${JSON.stringify({ type, object })}\n`;

    it('reassembles events split across chunks, surfaces bookmarks only when asked, ends with the stream', async () => {
      const whole = event('ADDED', wireLease('a', '5'));
      handler = streaming([
        whole.slice(0, 10),
        whole.slice(10),
        event('BOOKMARK', { kind: 'Lease', metadata: { resourceVersion: '8' } }),
        `${event('MODIFIED', wireLease('a', '9'))}${event('DELETED', wireLease('a', '10'))}`,
      ]);
      const { leases, transport } = clients();
      const plain: string[] = [];
      for await (const e of leases.watch({ resourceVersion: '4', signal: new AbortController().signal })) {
        plain.push(`${e.type} ${e.object.metadata.resourceVersion}`);
      }
      expect(plain).toEqual(['ADDED 5', 'MODIFIED 9', 'DELETED 10']);
      expect(seen[0]?.query.get('allowWatchBookmarks')).toBe('true');
      expect(seen[0]?.query.get('resourceVersion')).toBe('4');

      const withBookmarks: string[] = [];
      const watch = leases.watch({
        resourceVersion: '4',
        timeoutSeconds: 60,
        bookmarks: true,
        signal: new AbortController().signal,
      });
      for await (const e of watch) withBookmarks.push(`${e.type} ${e.object.metadata.resourceVersion}`);
      expect(withBookmarks).toEqual(['ADDED 5', 'BOOKMARK 8', 'MODIFIED 9', 'DELETED 10']);
      expect(seen[1]?.query.get('timeoutSeconds')).toBe('60');
      await transport.close();
    });

    it('turns an ERROR event with code 410, and an HTTP 410, into Gone', async () => {
      const { leases, transport } = clients();
      handler = streaming([
        event('ADDED', wireLease('a', '5')),
        event('ERROR', status(410, 'Expired', 'too old resource version: 1 (5)')),
      ]);
      const seenTypes: string[] = [];
      const error = await failure(
        (async () => {
          for await (const e of leases.watch({
            resourceVersion: '1',
            signal: new AbortController().signal,
          })) {
            seenTypes.push(e.type);
          }
        })(),
      );
      expect(seenTypes).toEqual(['ADDED']);
      expect([error.code, error.reason, error.message]).toEqual([
        410,
        'Gone',
        'too old resource version: 1 (5)',
      ]);

      handler = (_req, res) => json(res, 410, status(410, 'Gone', 'too old'));
      const http = await failure(
        (async () => {
          for await (const _ of leases.watch({
            resourceVersion: '1',
            signal: new AbortController().signal,
          })) {
            // nothing arrives
          }
        })(),
      );
      expect([http.code, http.reason]).toEqual([410, 'Gone']);
      await transport.close();
    });

    it('fails clearly on lines or objects it cannot read, instead of crashing later', async () => {
      const { leases, transport } = clients();
      for (const bad of [
        'not json\n',
        event('ADDED', { metadata: { resourceVersion: '1' } }),
        event('SURPRISE', {}),
      ]) {
        handler = streaming([bad]);
        const error = await failure(
          (async () => {
            for await (const _ of leases.watch({ signal: new AbortController().signal })) {
              // nothing valid arrives
            }
          })(),
        );
        expect(error.code).toBe(502);
      }
      handler = (_req, res) => json(res, 200, { kind: 'LeaseList', items: 'nope' });
      expect((await failure(leases.list())).code).toBe(502);
      await transport.close();
    });

    it('ends without an error when the caller aborts', async () => {
      handler = (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(event('ADDED', wireLease('a', '5')));
        // ... and then nothing, as an idle watch.
      };
      const { leases, transport } = clients();
      const controller = new AbortController();
      const got: string[] = [];
      for await (const e of leases.watch({ signal: controller.signal })) {
        got.push(e.type);
        controller.abort();
      }
      expect(got).toEqual(['ADDED']);
      await transport.close();
    });
  });
});
