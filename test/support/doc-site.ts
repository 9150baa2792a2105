/**
 * A small documentation site served by a real HTTP server: linked HTML pages, a PDF, a zip, an OpenAPI YAML
 * (API key in the query), the API it documents, and a 1 GB response streamed lazily (never built in memory).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { strToU8, zipSync } from 'fflate';

export interface DocSite {
  url: string;
  /** Requests to the documented API (/api/…), with their query and headers. */
  apiRequests: Array<{ url: string; headers: IncomingMessage['headers'] }>;
  /** Bytes the /huge route wrote before its client went away. */
  hugeBytesSent(): number;
  stop(): Promise<void>;
}

export const API_KEY_PARAM = 'api_key';

const OPENAPI_YAML = `openapi: 3.0.3
info:
  title: Inventory API
  version: 2.1.0
servers:
  - url: /api
security:
  - queryKey: []
components:
  securitySchemes:
    queryKey:
      type: apiKey
      in: query
      name: ${API_KEY_PARAM}
  schemas:
    Item:
      type: object
      properties:
        id: { type: integer }
        name: { type: string }
paths:
  /items:
    get:
      operationId: listItems
      summary: List inventory items
      parameters:
        - name: limit
          in: query
          required: false
          schema: { type: integer }
          description: Page size for pagination
      responses:
        '200':
          description: Items
          content:
            application/json:
              schema:
                type: array
                items: { $ref: '#/components/schemas/Item' }
  /items/{id}:
    get:
      operationId: getItem
      summary: One item
      parameters:
        - $ref: '#/components/parameters/ItemId'
      responses:
        '200': { description: The item }
`.replace(
  '  schemas:',
  `  parameters:
    ItemId:
      name: id
      in: path
      required: true
      schema: { type: integer }
  schemas:`,
);

function page(title: string, body: string): string {
  return `<!doctype html><html><head><title>${title}</title><style>body{}</style></head><body>
<nav><a href="/docs/index.html">Home</a> | navigation text that is not documentation</nav>
<main>${body}</main>
<footer>Copyright footer</footer><script>var tracking = 1;</script></body></html>`;
}

const INDEX = page(
  'Inventory docs',
  `<h1>Inventory API</h1><p>Welcome. Read about <a href="auth.html">authentication</a>,
  the <a href="guide.pdf">PDF guide</a>, the <a href="examples.zip">examples</a> and the
  <a href="openapi.yaml">OpenAPI document</a>. Also <a href="https://elsewhere.invalid/x">elsewhere</a>.</p>
  <h2>Quick start</h2><p>Call the items endpoint.</p><pre><code>curl "$BASE/api/items?api_key=KEY"</code></pre>`,
);

const AUTH = page(
  'Authentication',
  `<h1>Authentication</h1><p>Send your API key as the api_key query parameter.</p>
  <h2>Rotation</h2><p>Keys rotate every 90 days.</p>`,
);

/**
 * A PDF with one page per text (one page when `text` is a string); cross-reference offsets computed, so strict
 * readers accept it too.
 */
export function makePdf(text: string | string[]): Uint8Array {
  const pages = typeof text === 'string' ? [text] : text;
  // Objects: 1 catalog, 2 page tree, 3 font, then each page and its content stream.
  const pageIds = pages.map((_, index) => 4 + index * 2);
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages.length} >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    ...pages.flatMap((page, index) => {
      const stream = `BT /F1 12 Tf 72 720 Td (${page}) Tj ET`;
      return [
        `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${(pageIds[index] as number) + 1} 0 R /Resources << /Font << /F1 3 0 R >> >> >>`,
        `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
      ];
    }),
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(out.length);
    out += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) out += `${String(offset).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return strToU8(out);
}

export const PDF_TEXT = 'Rate limits: 100 requests per minute per key';

const PDF = makePdf(PDF_TEXT);
const ZIP = zipSync({
  'examples/pagination.md': strToU8(
    '# Pagination\n\nUse limit and the next cursor.\n\n```sh\ncurl "$BASE/api/items?limit=10"\n```\n',
  ),
  'examples/errors.txt': strToU8('Errors are JSON objects with a message field.'),
  'examples/logo.bin': new Uint8Array([0, 1, 2, 3, 0, 0, 7]),
});

/** A zip whose one entry inflates to `megabytes` MiB of zeros: a small file, a large unpacked size. */
export function makeZipBomb(megabytes: number): Uint8Array {
  return zipSync({ 'bomb.txt': new Uint8Array(megabytes * 1024 * 1024) }, { level: 9 });
}

/**
 * The same bomb with its headers lying: the local and central headers declare 1 000 unpacked bytes, so only
 * counting the bytes actually inflated can catch it.
 */
export function makeLyingZipBomb(megabytes: number): Uint8Array {
  const zip = makeZipBomb(megabytes);
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  for (let offset = 0; offset + 4 <= zip.length; offset++) {
    const signature = view.getUint32(offset, true);
    if (signature === 0x04034b50) view.setUint32(offset + 22, 1000, true);
    if (signature === 0x02014b50) view.setUint32(offset + 24, 1000, true);
  }
  return zip;
}

export async function startDocSite(): Promise<DocSite> {
  const apiRequests: DocSite['apiRequests'] = [];
  let hugeSent = 0;
  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    const send = (type: string, body: string | Uint8Array) => {
      response.writeHead(200, { 'content-type': type });
      response.end(body);
    };
    switch (path) {
      case '/docs/':
      case '/docs/index.html':
        return send('text/html; charset=utf-8', INDEX);
      case '/docs/auth.html':
        return send('text/html', AUTH);
      case '/docs/guide.pdf':
        return send('application/pdf', PDF);
      case '/docs/examples.zip':
        return send('application/zip', ZIP);
      case '/docs/openapi.yaml':
        return send('application/yaml', OPENAPI_YAML);
      case '/api/items':
        apiRequests.push({ url: request.url ?? '', headers: request.headers });
        return send('application/json', JSON.stringify([{ id: 1, name: 'bolt' }]));
      case '/huge': {
        // 1 GiB announced and streamed chunk by chunk while the client reads; stops when it goes away.
        const chunk = Buffer.alloc(64 * 1024, 'a');
        const total = 1024 * 1024 * 1024;
        response.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(total) });
        const pump = () => {
          while (hugeSent < total && !response.destroyed) {
            hugeSent += chunk.length;
            if (!response.write(chunk)) return void response.once('drain', pump);
          }
          if (!response.destroyed) response.end();
        };
        response.on('close', () => {});
        return pump();
      }
      case '/huge-unannounced': {
        // The same without content-length: the size limit must hold while reading.
        const chunk = Buffer.alloc(64 * 1024, 'b');
        const total = 1024 * 1024 * 1024;
        response.writeHead(200, { 'content-type': 'text/plain' });
        const pump = () => {
          while (hugeSent < total && !response.destroyed) {
            hugeSent += chunk.length;
            if (!response.write(chunk)) return void response.once('drain', pump);
          }
          if (!response.destroyed) response.end();
        };
        return pump();
      }
      default:
        response.writeHead(404);
        response.end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    apiRequests,
    hugeBytesSent: () => hugeSent,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
