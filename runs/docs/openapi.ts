/**
 * OpenAPI 3.x and Swagger 2.0 documents: parsed (JSON or YAML), dereferenced and validated by
 * @apidevtools/swagger-parser, then reduced to servers, security schemes and operations. External `$ref`s are
 * never followed: they would be fetches around the egress guard and the size limits.
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import { parse as parseYaml } from 'yaml';
import type { OpenApiDocument, OpenApiOperation, OpenApiParameter, SecurityScheme } from './summary.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const MAX_DESCRIPTION = 500;

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

/** The parsed object when `text` is an OpenAPI or Swagger document (JSON or YAML), else undefined. */
export function parseOpenApiText(text: string): Obj | undefined {
  const head = text.slice(0, 4096);
  if (!/["']?(openapi|swagger)["']?\s*:/.test(head)) return undefined;
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

/**
 * Dereferences and validates the document, then summarises it. A document that fails validation is still
 * summarised from its dereferenced form, and the validation message is kept with it.
 */
export async function summariseOpenApi(
  document: Obj,
  source: string,
): Promise<OpenApiDocument & { validationError?: string }> {
  const options = { resolve: { external: false }, dereference: { circular: 'ignore' as const } };
  let api: Obj;
  let validationError: string | undefined;
  try {
    api = (await SwaggerParser.validate(structuredClone(document) as never, options)) as unknown as Obj;
  } catch (error) {
    validationError = (error as Error).message.slice(0, 1000);
    try {
      api = (await SwaggerParser.dereference(structuredClone(document) as never, options)) as unknown as Obj;
    } catch {
      api = document;
    }
  }
  const summary = summariseDereferenced(api, source);
  return validationError ? { ...summary, validationError } : summary;
}

/** Pure: a dereferenced OpenAPI 3.x or Swagger 2.0 object reduced to what is kept. */
export function summariseDereferenced(api: Obj, source: string): OpenApiDocument {
  const swagger2 = typeof api.swagger === 'string';
  const info = isObject(api.info) ? api.info : {};
  const security = requirementNames(api.security);
  const operations: OpenApiOperation[] = [];
  const paths = isObject(api.paths) ? api.paths : {};
  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) continue;
    const shared = Array.isArray(item.parameters) ? item.parameters : [];
    for (const method of METHODS) {
      const operation = item[method];
      if (!isObject(operation)) continue;
      const own = Array.isArray(operation.parameters) ? operation.parameters : [];
      const parameters = mergeParameters(shared, own, swagger2);
      if (!swagger2) parameters.push(...requestBodyParameter(operation.requestBody));
      const entry: OpenApiOperation = { method: method.toUpperCase(), path, parameters };
      const operationId = str(operation.operationId);
      const summary = short(operation.summary) ?? short(operation.description);
      if (operationId) entry.operationId = operationId;
      if (summary) entry.summary = summary;
      const opSecurity = operation.security === undefined ? undefined : requirementNames(operation.security);
      if (opSecurity) entry.security = opSecurity;
      operations.push(entry);
    }
  }
  const document: OpenApiDocument = {
    kind: 'openapi',
    source,
    specVersion: String(api.openapi ?? api.swagger),
    servers: swagger2 ? swaggerServers(api) : openApiServers(api.servers),
    securitySchemes: securitySchemes(
      swagger2 ? api.securityDefinitions : isObject(api.components) ? api.components.securitySchemes : {},
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

function parameterOf(value: unknown, swagger2: boolean): OpenApiParameter | undefined {
  if (!isObject(value)) return undefined;
  const name = str(value.name);
  const location = str(value.in);
  if (!name || !location) return undefined;
  const parameter: OpenApiParameter = { name, in: location, required: value.required === true };
  const schema = isObject(value.schema) ? value.schema : undefined;
  const type = swagger2 && location !== 'body' ? str(value.type) : str(schema?.type);
  const description = short(value.description);
  if (type) parameter.type = type;
  if (description) parameter.description = description;
  return parameter;
}

/** Operation parameters override path-level ones of the same name and location. */
function mergeParameters(shared: unknown[], own: unknown[], swagger2: boolean): OpenApiParameter[] {
  const byKey = new Map<string, OpenApiParameter>();
  for (const value of [...shared, ...own]) {
    const parameter = parameterOf(value, swagger2);
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

function securitySchemes(value: unknown): SecurityScheme[] {
  if (!isObject(value)) return [];
  const schemes: SecurityScheme[] = [];
  for (const [id, raw] of Object.entries(value)) {
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
