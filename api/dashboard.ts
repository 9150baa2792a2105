/**
 * The dashboard's files (ui/, built into dist/ui by `npm run build`), served by the API role on its own
 * port: index.html at `/` and at every page path of the single-page app (a browser navigation, Accept:
 * text/html, to a path that is not the API's), hashed assets under /assets/ with a year-long immutable
 * cache, and a strict Content-Security-Policy: scripts, styles and requests to this origin only, no inline
 * code, no framing. The API's own paths are never shadowed: /v1, /mcp and the probes keep their JSON 404s.
 * Without a build, `/` answers a page that says how to make one.
 */

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SETTINGS } from '../config/config.ts';
import { KG_ERR_ROUTE_NOT_FOUND } from '../contract/api/errors.ts';

/**
 * No inline script or style, nothing from another origin (the dashboard must work on a cluster without
 * internet), no plugins, no framing (clickjacking), forms only to this origin.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE_HEADERS = {
  'content-security-policy': DASHBOARD_CSP,
  'cache-control': 'no-cache',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** Paths that belong to the API: a browser navigation there gets the API's answer, never the app. */
const API_PATHS = [
  /^\/v1(\/|$)/,
  /^\/mcp(\/|$)/,
  /^\/(healthz|readyz|metrics)$/,
  /^\/assets\//,
  /^\/\.well-known\//,
];

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.map': 'application/json',
};

interface StaticFile {
  body: Buffer;
  type: string;
  /** Compressed on first request, then kept. */
  gzip?: Buffer;
  brotli?: Buffer;
}

/** Where `npm run build` puts the dashboard, seen from this file as source (api/) or compiled (dist/api/). */
export function defaultDashboardDir(): string {
  const here = import.meta.dirname;
  const candidates = [resolve(here, '..', 'dist', 'ui'), resolve(here, '..', 'ui')];
  return candidates.find((dir) => existsSync(join(dir, 'index.html'))) ?? (candidates[0] as string);
}

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kubeglue: dashboard not built</title></head>
<body><main><h1>The kubeglue dashboard has not been built</h1>
<p>This server runs, and its API is at <a href="/v1/openapi.json">/v1</a>, but the dashboard's files are missing.
Build them in the checkout with <code>npm run build</code> (or <code>npm run build:ui</code> for the dashboard alone),
then reload this page. <code>npm start</code> and the container image build it for you.</p>
<p>A server started with <code>${SETTINGS.tree.uiDir.name}</code> serves the build in that directory.</p></main></body></html>
`;

/** What the dashboard needs from the server's not-found handler. */
export interface Dashboard {
  /** Answers a browser navigation to a page of the app with index.html; false: not one. */
  page(request: FastifyRequest, reply: FastifyReply): boolean;
}

function acceptsHtml(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  return typeof accept === 'string' && accept.includes('text/html');
}

function send(request: FastifyRequest, reply: FastifyReply, file: StaticFile, cache: string): FastifyReply {
  const accepted = String(request.headers['accept-encoding'] ?? '');
  reply.header('content-type', file.type).header('cache-control', cache).header('vary', 'accept-encoding');
  // Small files gain nothing from compression.
  if (file.body.length > 1024 && /\bbr\b/.test(accepted)) {
    file.brotli ??= brotliCompressSync(file.body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
    return reply.header('content-encoding', 'br').send(file.brotli);
  }
  if (file.body.length > 1024 && /\bgzip\b/.test(accepted)) {
    file.gzip ??= gzipSync(file.body, { level: 9 });
    return reply.header('content-encoding', 'gzip').send(file.gzip);
  }
  return reply.send(file.body);
}

function readFiles(dir: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (type) files.set(name, { body: readFileSync(join(dir, name)), type });
  }
  return files;
}

/**
 * Registers `/`, `/favicon.svg` and `/assets/:file` on the server, reading the build in dir once (its few
 * files stay in memory; a rebuild is served after a restart). Returns what the not-found handler asks.
 */
export function installDashboard(app: FastifyInstance, options: { dir: string }): Dashboard {
  const indexPath = join(options.dir, 'index.html');
  const built = existsSync(indexPath);
  const index: StaticFile = built
    ? { body: readFileSync(indexPath), type: TYPES['.html'] as string }
    : { body: Buffer.from(NOT_BUILT), type: TYPES['.html'] as string };
  const assets =
    built && existsSync(join(options.dir, 'assets')) ? readFiles(join(options.dir, 'assets')) : new Map();
  const root = built ? readFiles(options.dir) : new Map<string, StaticFile>();

  const sendIndex = (request: FastifyRequest, reply: FastifyReply) => {
    reply.headers(PAGE_HEADERS);
    if (!built) reply.status(503);
    return send(request, reply, index, 'no-cache');
  };

  app.get('/', async (request, reply) => sendIndex(request, reply));
  app.get('/favicon.svg', async (request, reply) => {
    const icon = root.get('favicon.svg');
    if (!icon) throw KG_ERR_ROUTE_NOT_FOUND(request.method, request.url);
    return send(request, reply, icon, 'public, max-age=86400');
  });
  app.get<{ Params: { file: string } }>('/assets/:file', async (request, reply) => {
    const file = assets.get(request.params.file);
    // The JSON 404 of any unknown path: an old hash after a deploy is reloaded through index.html.
    if (!file) throw KG_ERR_ROUTE_NOT_FOUND(request.method, request.url.split('?', 1)[0] ?? '');
    return send(request, reply, file, IMMUTABLE);
  });

  return {
    page: (request, reply) => {
      if (request.method !== 'GET' && request.method !== 'HEAD') return false;
      const path = request.url.split('?', 1)[0] ?? '';
      if (API_PATHS.some((pattern) => pattern.test(path)) || !acceptsHtml(request)) return false;
      void sendIndex(request, reply);
      return true;
    },
  };
}
