import { z } from 'zod';
import { ErrorBody } from './bodies.ts';
import { queryOf, ROUTES, type RouteSpec } from './routes.ts';

type Json = { [key: string]: unknown };

/** The version of the /v1 API, as its OpenAPI document and the MCP endpoint's server info state it. */
export const API_VERSION = '1.0.0';

const SCHEMA_PREFIX = '#/components/schemas/';

/** Kubernetes-only keywords mean nothing to OpenAPI clients. */
function withoutKubernetesKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutKubernetesKeys);
  if (typeof value !== 'object' || value === null) return value;
  const out: Json = {};
  for (const [key, child] of Object.entries(value)) {
    if (!key.startsWith('x-kubernetes-')) out[key] = withoutKubernetesKeys(child);
  }
  return out;
}

function idOf(schema: z.ZodType): string | undefined {
  const id = z.globalRegistry.get(schema)?.id;
  return typeof id === 'string' ? id : undefined;
}

function schemaRef(schema: z.ZodType): Json {
  const id = idOf(schema);
  if (!id) throw new Error('route bodies and responses must be registered schemas (meta id)');
  return { $ref: `${SCHEMA_PREFIX}${id}` };
}

function parametersOf(route: RouteSpec): Json[] {
  const params: Json[] = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => ({
    name: match[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  const json = z.toJSONSchema(queryOf(route), { io: 'input' }) as Json;
  const properties = (json.properties ?? {}) as Record<string, Json>;
  const required = new Set((json.required as string[] | undefined) ?? []);
  for (const [name, schema] of Object.entries(properties)) {
    const { description, ...rest } = schema;
    params.push({
      name,
      in: 'query',
      required: required.has(name),
      ...(description ? { description } : {}),
      schema: rest,
    });
  }
  return params;
}

function operationOf(route: RouteSpec): Json {
  const responses: Json = {};
  // Every operation that needs a scope can answer 403 KG_ERR_SCOPE_REQUIRED.
  const declared =
    route.public || route.scopes.length === 0 || route.responses[403]
      ? route.responses
      : {
          ...route.responses,
          403: {
            description: `The API key lacks a scope it needs (${route.scopes.join(', ')})`,
            schema: ErrorBody,
          },
        };
  for (const [status, response] of Object.entries(declared)) {
    const types = [response.contentType ?? 'application/json', ...(response.alsoAs ?? [])];
    const content = response.schema
      ? {
          content: Object.fromEntries(
            types.map((type) => [type, { schema: schemaRef(response.schema as z.ZodType) }]),
          ),
        }
      : response.contentType
        ? { content: { [response.contentType]: { schema: { type: 'string' } } } }
        : {};
    responses[status] = { description: response.description, ...content };
  }
  const operation: Json = {
    operationId: route.operationId,
    summary: route.summary,
    tags: [route.tag],
    parameters: parametersOf(route),
    responses,
    // OpenAPI 3.1 lets a bearer scheme name the roles an operation needs: here, the key's scopes.
    security: route.public ? [] : [{ ApiKeyAuth: [...route.scopes] }],
  };
  if (route.body) {
    const bodySchema = idOf(route.body.schema) ? schemaRef(route.body.schema) : {};
    const content: Json = { 'application/json': { schema: bodySchema } };
    for (const type of route.bodyContentTypes ?? []) content[type] = { schema: {} };
    operation.requestBody = { required: true, content };
  }
  return operation;
}

/** The OpenAPI 3.1 document of /v1, derived from the route table and the zod schemas. */
export function openApiDocument(): Json {
  const { schemas } = z.toJSONSchema(z.globalRegistry, {
    io: 'input',
    uri: (id) => `${SCHEMA_PREFIX}${id}`,
  }) as { schemas: Record<string, Json> };
  const components: Json = {};
  for (const id of Object.keys(schemas).sort()) {
    const { $schema: _s, $id: _id, ...schema } = schemas[id] as Json;
    components[id] = withoutKubernetesKeys(schema);
  }
  const paths: Record<string, Json> = {};
  for (const route of ROUTES) {
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: operationOf(route) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'kubeglue',
      version: API_VERSION,
      description: 'Tool execution service: tools, runs, systems, webhooks. Generated from contract/.',
    },
    servers: [{ url: '/v1' }],
    security: [{ ApiKeyAuth: [] }],
    tags: [...new Set(ROUTES.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: {
        ApiKeyAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'API key as a bearer token, or in the `token` query parameter.',
        },
      },
      schemas: components,
    },
  };
}
