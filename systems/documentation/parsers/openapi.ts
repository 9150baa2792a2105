/**
 * OpenAPI 3.x and Swagger 2.0 documents, reduced to servers, security schemes and operations. The summary
 * reads a handful of places (path items, parameters and their schema's type, request bodies, security
 * schemes) and follows the local `$ref`s it meets there, one lookup each: it never expands the document, so
 * its cost is the document's size whatever its `$ref`s (19 schemas each referring twice to the next expand to
 * 2^19 copies). Validation (@apidevtools/swagger-parser) does expand it: it runs in a worker thread
 * (openapi-thread.ts) and only when measureExpansion() finds the expanded document within the bounds.
 * External `$ref`s are never followed: they would be fetches around the egress guard and the size limits.
 */
import { parse as parseYaml } from 'yaml';
import type { OpenApiDocument, OpenApiOperation, OpenApiParameter, SecurityScheme } from './summary.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const MAX_DESCRIPTION = 500;
/** `$ref`s followed in a row for one value (a chain of references to references). */
const MAX_REF_HOPS = 32;

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function short(value: unknown): string | undefined {
  const text = str(value);
  return text && text.length > MAX_DESCRIPTION ? `${text.slice(0, MAX_DESCRIPTION)}…` : text;
}

const HEAD = /["']?(openapi|swagger)["']?\s*:/;

/** Whether the text may be an OpenAPI or Swagger document (its first 4 KB name the version); cheap. */
export function looksLikeOpenApi(text: string): boolean {
  return HEAD.test(text.slice(0, 4096));
}

/** The parsed object when `text` is an OpenAPI or Swagger document (JSON or YAML), else undefined. */
export function parseOpenApiText(text: string): Obj | undefined {
  if (!looksLikeOpenApi(text)) return undefined;
  let parsed: unknown;
  try {
    // YAML is a superset of JSON; maxAliasCount bounds alias expansion (the YAML "billion laughs").
    parsed = parseYaml(text, { maxAliasCount: 1000 });
  } catch {
    return undefined;
  }
  if (!isObject(parsed)) return undefined;
  return typeof parsed.openapi === 'string' || typeof parsed.swagger === 'string' ? parsed : undefined;
}

/** The value at a local JSON pointer (`#/components/schemas/Item`), or undefined. */
function pointerTarget(root: Obj, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let value: unknown = root;
  const path = ref.slice(1);
  if (path === '') return root;
  if (!path.startsWith('/')) return undefined;
  for (const raw of path.slice(1).split('/')) {
    let token: string;
    try {
      token = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    } catch {
      return undefined;
    }
    if (Array.isArray(value)) value = value[Number(token)];
    else if (isObject(value) && Object.hasOwn(value, token)) value = value[token];
    else return undefined;
  }
  return value;
}

/**
 * Follows a value's local `$ref` (and a referenced `$ref`, up to MAX_REF_HOPS); anything else as it is. A
 * reference that is external, broken or circular stays a `{$ref}` object, which the summary skips.
 */
function resolverOf(root: Obj): (value: unknown) => unknown {
  return (value) => {
    let current = value;
    const seen = new Set<string>();
    for (let hop = 0; hop < MAX_REF_HOPS; hop++) {
      if (!isObject(current) || typeof current.$ref !== 'string') return current;
      const ref = current.$ref;
      if (seen.has(ref)) return current;
      seen.add(ref);
      const target = pointerTarget(root, ref);
      if (target === undefined) return current;
      current = target;
    }
    return current;
  };
}

/** The size (characters of JSON) and depth the document would have with every local `$ref` expanded. */
export interface Expansion {
  bytes: number;
  depth: number;
}

/**
 * Measures the document as dereferencing would make it, in one pass over the document as written: each
 * reference target is measured once and its size reused wherever it is referenced, so 19 levels of doubling
 * cost 19 measurements, not 2^19. A reference back into its own expansion (circular) counts as left in place,
 * as the validation leaves it. Recursion as deep as the document itself; a document deeper than the stack
 * throws RangeError, which the caller treats as past the depth bound.
 */
export function measureExpansion(root: Obj): Expansion {
  const measured = new Map<string, Expansion>();
  const expanding = new Set<string>();
  const visit = (value: unknown): Expansion => {
    if (Array.isArray(value)) {
      let bytes = 2 + Math.max(value.length - 1, 0);
      let depth = 0;
      for (const item of value) {
        const inner = visit(item);
        bytes += inner.bytes;
        depth = Math.max(depth, inner.depth);
      }
      return { bytes, depth: depth + 1 };
    }
    if (isObject(value)) {
      if (typeof value.$ref === 'string') {
        const ref = value.$ref;
        const known = measured.get(ref);
        if (known) return known;
        const target = expanding.has(ref) ? undefined : pointerTarget(root, ref);
        if (target === undefined) return { bytes: ref.length + 12, depth: 1 };
        expanding.add(ref);
        const inner = visit(target);
        expanding.delete(ref);
        measured.set(ref, inner);
        return inner;
      }
      const keys = Object.keys(value);
      let bytes = 2 + Math.max(keys.length - 1, 0);
      let depth = 0;
      for (const key of keys) {
        const inner = visit(value[key]);
        bytes += key.length + 3 + inner.bytes;
        depth = Math.max(depth, inner.depth);
      }
      return { bytes, depth: depth + 1 };
    }
    if (typeof value === 'string') return { bytes: value.length + 2, depth: 0 };
    return { bytes: String(value).length, depth: 0 };
  };
  return visit(root);
}

/**
 * Pure: an OpenAPI 3.x or Swagger 2.0 object (as written, or dereferenced) reduced to what is kept; local
 * `$ref`s are followed where a kept value is read.
 */
export function summariseOpenApiDocument(api: Obj, source: string): OpenApiDocument {
  const resolve = resolverOf(api);
  const swagger2 = typeof api.swagger === 'string';
  const infoValue = resolve(api.info);
  const info = isObject(infoValue) ? infoValue : {};
  const security = requirementNames(resolve(api.security));
  const operations: OpenApiOperation[] = [];
  const paths = resolve(api.paths);
  for (const [path, raw] of Object.entries(isObject(paths) ? paths : {})) {
    const item = resolve(raw);
    if (!isObject(item)) continue;
    const shared = resolve(item.parameters);
    for (const method of METHODS) {
      const operation = resolve(item[method]);
      if (!isObject(operation)) continue;
      const own = resolve(operation.parameters);
      const parameters = mergeParameters(
        Array.isArray(shared) ? shared : [],
        Array.isArray(own) ? own : [],
        swagger2,
        resolve,
      );
      if (!swagger2) parameters.push(...requestBodyParameter(resolve(operation.requestBody)));
      const entry: OpenApiOperation = { method: method.toUpperCase(), path, parameters };
      const operationId = str(operation.operationId);
      const summary = short(operation.summary) ?? short(operation.description);
      const description = short(operation.summary) ? short(operation.description) : undefined;
      const tags = Array.isArray(operation.tags) ? operation.tags.flatMap((tag) => str(tag) ?? []) : [];
      if (operationId) entry.operationId = operationId;
      if (summary) entry.summary = summary;
      if (description) entry.description = description;
      if (tags.length > 0) entry.tags = tags.slice(0, 10);
      const opSecurity = operation.security === undefined ? undefined : requirementNames(operation.security);
      if (opSecurity) entry.security = opSecurity;
      operations.push(entry);
    }
  }
  const document: OpenApiDocument = {
    kind: 'openapi',
    source,
    specVersion: String(api.openapi ?? api.swagger),
    servers: swagger2 ? swaggerServers(api) : openApiServers(resolve(api.servers)),
    securitySchemes: securitySchemes(
      resolve(swagger2 ? api.securityDefinitions : schemesOf(resolve(api.components))),
      resolve,
    ),
    security,
    operations,
  };
  const title = str(info.title);
  const version = str(info.version);
  if (title) document.title = title;
  if (version) document.version = version;
  return document;
}

function requirementNames(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  const names: string[] = [];
  for (const requirement of value) {
    if (!isObject(requirement)) continue;
    for (const name of Object.keys(requirement)) if (!names.includes(name)) names.push(name);
  }
  return names;
}

function schemesOf(components: unknown): unknown {
  return isObject(components) ? components.securitySchemes : undefined;
}

type Resolve = (value: unknown) => unknown;

function parameterOf(raw: unknown, swagger2: boolean, resolve: Resolve): OpenApiParameter | undefined {
  const value = resolve(raw);
  if (!isObject(value)) return undefined;
  const name = str(value.name);
  const location = str(value.in);
  if (!name || !location) return undefined;
  const parameter: OpenApiParameter = { name, in: location, required: value.required === true };
  const resolved = resolve(value.schema);
  const schema = isObject(resolved) ? resolved : undefined;
  const type = swagger2 && location !== 'body' ? str(value.type) : str(schema?.type);
  const description = short(value.description);
  if (type) parameter.type = type;
  if (description) parameter.description = description;
  return parameter;
}

/** Operation parameters override path-level ones of the same name and location. */
function mergeParameters(
  shared: unknown[],
  own: unknown[],
  swagger2: boolean,
  resolve: Resolve,
): OpenApiParameter[] {
  const byKey = new Map<string, OpenApiParameter>();
  for (const value of [...shared, ...own]) {
    const parameter = parameterOf(value, swagger2, resolve);
    if (parameter) byKey.set(`${parameter.in}:${parameter.name}`, parameter);
  }
  return [...byKey.values()];
}

function requestBodyParameter(body: unknown): OpenApiParameter[] {
  if (!isObject(body) || !isObject(body.content)) return [];
  const types = Object.keys(body.content);
  const parameter: OpenApiParameter = { name: 'body', in: 'body', required: body.required === true };
  if (types.length > 0) parameter.type = types.join(', ');
  const description = short(body.description);
  if (description) parameter.description = description;
  return [parameter];
}

function openApiServers(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((server) => (isObject(server) && str(server.url) ? [server.url as string] : []));
}

function swaggerServers(api: Obj): string[] {
  const host = str(api.host);
  if (!host) return [];
  const basePath = str(api.basePath) ?? '';
  const schemes = Array.isArray(api.schemes) && api.schemes.length > 0 ? api.schemes : ['https'];
  return schemes.map((scheme) => `${String(scheme)}://${host}${basePath}`);
}

function securitySchemes(value: unknown, resolve: Resolve): SecurityScheme[] {
  if (!isObject(value)) return [];
  const schemes: SecurityScheme[] = [];
  for (const [id, entry] of Object.entries(value)) {
    const raw = resolve(entry);
    if (!isObject(raw)) continue;
    const type = str(raw.type);
    if (!type) continue;
    const scheme: SecurityScheme = { id, type };
    for (const key of ['in', 'name', 'scheme'] as const) {
      const text = str(raw[key]);
      if (text) scheme[key] = key === 'scheme' ? text.toLowerCase() : text;
    }
    const description = short(raw.description);
    if (description) scheme.description = description;
    schemes.push(scheme);
  }
  return schemes;
}
