import type { FastifyRequest } from 'fastify';
import {
  KG_ERR_NO_CHALLENGE,
  KG_ERR_TOOL_NOT_FOUND,
  KG_ERR_WEBHOOK_BODY_INVALID,
} from '../../contract/api/errors.ts';
import type { JsonObject, JsonValue } from '../../contract/json.ts';
import type { RunService, ToolLookup } from '../../runs/service.ts';
import { assertToolAccess, principalOf } from '../auth.ts';
import type { BodyReader, HandlersOf } from './register.ts';

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

/** The tool gets the raw body too (to check a sender's signature), so every body is read as text. */
const webhookBody: BodyReader = {
  as: 'string',
  parse: (request, raw) => {
    const text = raw as string;
    const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    try {
      let value: JsonValue | undefined;
      if (type === 'application/x-www-form-urlencoded') {
        value = Object.fromEntries(new URLSearchParams(text));
      } else if (type === 'application/json' || type.endsWith('+json') || (!type && /^\s*[[{]/.test(text))) {
        value = text.trim() === '' ? undefined : (JSON.parse(text) as JsonValue);
      } else {
        value = text === '' ? undefined : text;
      }
      return { raw: text, value } satisfies RawBody;
    } catch {
      throw KG_ERR_WEBHOOK_BODY_INVALID();
    }
  },
};

/** `/v1/hooks/{toolId}` (semantics.md "Webhooks in"): challenges are answered, anything else runs the tool. */
export function hookHandlers(deps: HookRouteDeps): HandlersOf<'triggerHook' | 'verifyHook'> {
  const findTool = async (request: FastifyRequest, toolId: string) => {
    // Access first: a tool the key may not use answers exactly like one that does not exist.
    assertToolAccess(request, toolId);
    const tool = await deps.tools.get(toolId);
    if (!tool) throw KG_ERR_TOOL_NOT_FOUND(toolId);
    return tool;
  };

  return {
    triggerHook: {
      body: webhookBody,
      handle: async ({ params: { toolId }, query }, request, reply) => {
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
          parentSpanId: request.parentSpanId,
          requestSource: 'webhook',
          forceAsync: true,
          ...(query.mode ? { mode: query.mode } : {}),
        });
        return reply.status(202).send({ runId: started.run.runId, status: 'accepted', toolId });
      },
    },

    verifyHook: async ({ params: { toolId }, query }, request, reply) => {
      await findTool(request, toolId);
      // A challenge given twice is not a string: no challenge.
      const text = (value: string) => reply.type('text/plain').send(value);
      if (query['hub.mode'] === 'subscribe' && query['hub.challenge'] !== undefined)
        return text(query['hub.challenge']);
      if (query.validationToken !== undefined) return text(query.validationToken);
      if (query.challenge !== undefined) return text(query.challenge);
      throw KG_ERR_NO_CHALLENGE();
    },
  };
}
