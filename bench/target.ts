import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The system a bench's steps call, on loopback with keep-alive: `/items` answers what `items` makes of the
 * request URL, anything else `{"ok":true}`.
 */
export async function startJsonTarget(items: (url: URL) => string) {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    const url = new URL(req.url ?? '/', 'http://x');
    res.end(url.pathname === '/items' ? items(url) : '{"ok":true}');
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, stop: () => new Promise<void>((r) => server.close(() => r())) };
}
