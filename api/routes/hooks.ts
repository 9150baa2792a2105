import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  KG_ERR_NO_CHALLENGE,
  KG_ERR_TOOL_NOT_FOUND,
  KG_ERR_WEBHOOK_BODY_INVALID,
} from '../../contract/api/errors.ts';
import { ExecutionMode } from '../../contract/api/run.ts';
import type { JsonObject, JsonValue } from '../../contract/json.ts';
import type { RunService, ToolLookup } from '../../runs/service.ts';
import { assertToolAccess, principalOf } from '../auth.ts';
import { parseInput } from '../validation.ts';

const HookParams = z.object({ toolId: z.string().min(1) });
const HookQuery = z.looseObject({ mode: ExecutionMode.optional(), validationToken: z.string().optional() });
/** Never forwarded to the tool: they carry the API key or the caller's session. */
const PRIVATE_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

interface RawBody {
  raw: string;
  value: JsonValue | undefined;
}

function parsedBody(request: FastifyRequest): RawBody {
  return (request.body as RawBody | undefined) ?? { raw: '', value: undefined };
}

function asObject(value: JsonValue | undefined): JsonObject {
  if (value === undefined || value === null || value === '') return {};
  if (typeof value === 'object' && !Array.isArray(value)) return value;
  return { body: value };
}

function webhookContext(request: FastifyRequest, raw: string): JsonObject {
  const headers: JsonObject = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (!PRIVATE_HEADERS.has(name) && value !== undefined) headers[name] = value;
  }
  const { token: _token, ...query } = request.query as Record<string, JsonValue>;
  return { method: request.method, headers, query, rawBody: raw };
}

export interface HookRouteDeps {
  runs: RunService;
  tools: ToolLookup;
}

/** `/v1/hooks/{toolId}` (semantics.md "Webhooks in"): challenges are answered, anything else runs the tool. */
export function registerHookRoutes(app: FastifyInstance, deps: HookRouteDeps): void {
  const findTool = async (request: FastifyRequest, toolId: string) => {
    // Access first: a tool the key may not use answers exactly like one that does not exist.
    assertToolAccess(request, toolId);
    const tool = await deps.tools.get(toolId);
    if (!tool) throw KG_ERR_TOOL_NOT_FOUND(toolId);
    return tool;
  };

  app.register(async (scope) => {
    // The tool gets the raw body too (to check a sender's signature), so every body is read as text.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string' }, (request, raw, done) => {
      const text = raw as string;
      const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
      try {
        let value: JsonValue | undefined;
        if (type === 'application/x-www-form-urlencoded') {
          value = Object.fromEntries(new URLSearchParams(text));
        } else if (
          type === 'application/json' ||
          type.endsWith('+json') ||
          (!type && /^\s*[[{]/.test(text))
        ) {
          value = text.trim() === '' ? undefined : (JSON.parse(text) as JsonValue);
        } else {
          value = text === '' ? undefined : text;
        }
        done(null, { raw: text, value } satisfies RawBody);
      } catch {
        done(KG_ERR_WEBHOOK_BODY_INVALID(), undefined);
      }
    });

    scope.post('/v1/hooks/:toolId', async (request, reply) => {
      const { toolId } = parseInput(HookParams, request.params, 'path');
      const query = parseInput(HookQuery, request.query, 'query');
      await findTool(request, toolId);
      if (query.validationToken !== undefined) return reply.type('text/plain').send(query.validationToken);
      const body = parsedBody(request);
      const value = body.value;
      if (value && typeof value === 'object' && !Array.isArray(value)) {
        if ('challenge' in value && value.challenge !== undefined) return { challenge: value.challenge };
        if (value.type === 'verification' && value.verification_token !== undefined) {
          return { verification_token: value.verification_token };
        }
      }
      const inputs = { ...asObject(value), __webhook__: webhookContext(request, body.raw) };
      const started = await deps.runs.start({
        toolId,
        request: { inputs },
        caller: principalOf(request),
        traceId: request.traceId,
        requestSource: 'webhook',
        forceAsync: true,
        ...(query.mode ? { mode: query.mode } : {}),
      });
      return reply.status(202).send({ runId: started.run.runId, status: 'accepted', toolId });
    });
  });

  app.get('/v1/hooks/:toolId', async (request, reply) => {
    const { toolId } = parseInput(HookParams, request.params, 'path');
    await findTool(request, toolId);
    const query = request.query as Record<string, unknown>;
    const text = (value: unknown) => reply.type('text/plain').send(String(value));
    if (query['hub.mode'] === 'subscribe' && typeof query['hub.challenge'] === 'string')
      return text(query['hub.challenge']);
    if (typeof query.validationToken === 'string') return text(query.validationToken);
    if (typeof query.challenge === 'string') return text(query.challenge);
    throw KG_ERR_NO_CHALLENGE();
  });
}
