/**
 * The dashboard (ui/) and the CLI (bin/cli/) call the /v1 API only through the client built on the route
 * table (contract/api/route-client.ts): each call names its route as route-paths.ts exports it, and the
 * type check holds its parameters, query, body and answer to the table. Read here from the sources: no
 * other way to the API (a global fetch, a method and path written by hand), and every route named is one
 * of the table's.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROUTE_TABLE } from '../../../contract/api/routes.ts';

const REPO = join(import.meta.dirname, '..', '..', '..');
const CALLERS = { dashboard: 'ui', cli: join('bin', 'cli') } as const;

/** Code without its comments, which name routes and paths in prose (`GET /v1/runs/{runId}`). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/.*$/gm, '$1');

function sources(folder: string): Array<{ file: string; text: string }> {
  return readdirSync(join(REPO, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.tsx?$/.test(entry.name) && entry.name !== 'build.ts')
    .map((entry) => {
      const path = join(entry.parentPath, entry.name);
      return { file: relative(REPO, path), text: code(readFileSync(path, 'utf8')) };
    });
}

/** The operationIds a folder's sources name as `routes.<operationId>`. */
function routesNamed(folder: string): Set<string> {
  const named = sources(folder).flatMap(({ text }) =>
    [...text.matchAll(/\broutes\.(\w+)/g)].map((match) => match[1] as string),
  );
  return new Set(named);
}

const OPERATIONS = new Set<string>(ROUTE_TABLE.map((route) => route.operationId));

describe.each(Object.entries(CALLERS))('the %s', (_caller, folder) => {
  it('calls only routes of the route table', () => {
    const named = routesNamed(folder);
    expect(named.size).toBeGreaterThan(0);
    expect([...named].filter((operationId) => !OPERATIONS.has(operationId))).toEqual([]);
  });

  it('reaches the API only through the route client: no fetch of its own, no method and path by hand', () => {
    const bypassing = sources(folder).flatMap(({ file, text }) => [
      // A fetch of anything but a route (`fetch(url)`, `window.fetch(…)`); the client's `.fetch(routes.x, …)` is a route call.
      ...[...text.matchAll(/\bfetch\s*\((?!\s*routes\.)/g)].map(() => `${file}: fetch(…) of no route`),
      // The browser's other ways to a URL.
      ...[...text.matchAll(/\bnew\s+(?:XMLHttpRequest|EventSource|WebSocket)\s*\(|\.sendBeacon\s*\(/g)].map(
        (match) => `${file}: ${match[0]}`,
      ),
      // A route given as text, `call('GET /runs/{runId}', …)` or kept in a constant, instead of its routes.<operationId>.
      ...[...text.matchAll(/['"`](?:GET|POST|PUT|PATCH|DELETE|HEAD) \//g)].map(
        () => `${file}: a route as text`,
      ),
      // A /v1 path in code (a link a person follows, `href="/v1/openapi.json"`, is no call).
      ...[...text.matchAll(/(?<!href=)['"`]\/v1\//g)].map(() => `${file}: a /v1 path`),
    ]);
    expect(bypassing).toEqual([]);
  });
});

it('the dashboard and the CLI share one error class: neither declares its own', () => {
  const declared = Object.values(CALLERS).flatMap((folder) =>
    sources(folder)
      .filter(({ text }) => /\bclass \w+ extends (?:\w*Error|ApiFailure)\b/.test(text))
      .map(({ file }) => file),
  );
  // The CLI's usage and configuration mistakes (exit code 2) are not API failures.
  expect(declared).toEqual([join('bin', 'cli', 'command.ts')]);
});
