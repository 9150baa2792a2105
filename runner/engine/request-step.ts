import type { JsonObject, JsonValue } from '../../crds/json.ts';
import type { RequestStepConfig } from '../../crds/tool.ts';
import { createPaginator } from './pagination.ts';
import { applySystemAuth } from './system-auth.ts';
import {
  renderBody,
  renderHeaders,
  renderQuery,
  renderString,
  type Evaluate as TemplateEvaluate,
} from './template.ts';
import type { EngineEvent, HttpCall, ProtocolContext, Protocols, ResolvedSystem } from './types.ts';

const SCHEME = /^[a-z][a-z0-9+.-]*:/i;
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

export interface RequestStepInput {
  stepId: string;
  config: RequestStepConfig;
  modify: boolean;
  sourceData: JsonObject;
  system: ResolvedSystem | undefined;
  systemCredentials: Record<string, string>;
  evaluate: TemplateEvaluate;
  protocols: Protocols;
  ctx: ProtocolContext;
  onEvent: (event: EngineEvent) => void;
}

/** A step URL without a scheme is relative to its system's base URL. */
function absoluteUrl(rendered: string, system: ResolvedSystem | undefined, stepId: string): string {
  if (SCHEME.test(rendered)) return rendered;
  if (!system?.url) {
    throw new Error(`URL '${rendered}' has no scheme and step ${stepId} has no system with a base URL`);
  }
  return `${system.url.replace(/\/+$/, '')}/${rendered.replace(/^\/+/, '')}`;
}

function parseBody(body: JsonValue): unknown {
  if (typeof body !== 'string') return body;
  const trimmed = body.trim();
  if (!trimmed) return trimmed;
  try {
    return JSON.parse(trimmed);
  } catch {
    return trimmed;
  }
}

async function httpCall(input: RequestStepInput, sourceData: JsonObject): Promise<HttpCall> {
  const { config, evaluate } = input;
  const url = absoluteUrl(await renderString(config.url, sourceData, evaluate), input.system, input.stepId);
  const headers = config.headers ? await renderHeaders(config.headers, sourceData, evaluate) : {};
  const query = config.queryParams ? await renderQuery(config.queryParams, sourceData, evaluate) : [];
  if (input.system) applySystemAuth(input.system, input.systemCredentials, headers, query);
  const hasBody = config.body !== undefined && config.method !== 'GET' && config.method !== 'HEAD';
  return {
    method: config.method,
    url,
    headers,
    query,
    body: hasBody ? await renderBody(config.body as JsonValue, sourceData, evaluate) : undefined,
    retry: !input.modify || IDEMPOTENT_METHODS.has(config.method),
  };
}

async function runHttp(input: RequestStepInput): Promise<JsonValue> {
  const { config, protocols, ctx } = input;
  const pagination = config.pagination;
  if (!pagination || pagination.type === 'disabled') {
    return (await protocols.http(await httpCall(input, input.sourceData), ctx)).data;
  }
  const paginator = createPaginator(
    { ...pagination, type: pagination.type },
    { evaluate: input.evaluate, sourceData: input.sourceData },
  );
  for (;;) {
    ctx.signal.throwIfAborted();
    const variables = paginator.variables();
    const reply = await protocols.http(await httpCall(input, { ...input.sourceData, ...variables }), ctx);
    const outcome = await paginator.accept({ data: reply.data, headers: reply.headers });
    const merged = paginator.result();
    input.onEvent({
      type: 'page_fetched',
      stepId: input.stepId,
      page: variables.page,
      totalFetched: Array.isArray(merged) ? merged.length : 1,
    });
    if (outcome.done) return merged;
  }
}

/** The scheme without rendering when it is literal text, so HTTP templates render once per request. */
async function schemeOf(input: RequestStepInput): Promise<string> {
  const literal = SCHEME.exec(input.config.url)?.[0];
  if (literal) return literal.toLowerCase();
  if (!input.config.url.includes('<<') && input.system?.url) return new URL(input.system.url).protocol;
  const rendered = await renderString(input.config.url, input.sourceData, input.evaluate);
  return new URL(absoluteUrl(rendered, input.system, input.stepId)).protocol;
}

/** Renders a request step and sends it through the protocol its URL scheme selects. */
export async function runRequestStep(input: RequestStepInput): Promise<JsonValue> {
  const { config, sourceData, evaluate, protocols, ctx } = input;
  const scheme = await schemeOf(input);
  if (scheme === 'http:' || scheme === 'https:') return runHttp(input);
  const url = absoluteUrl(await renderString(config.url, sourceData, evaluate), input.system, input.stepId);
  switch (scheme) {
    case 'postgres:':
    case 'postgresql:': {
      const body =
        config.body === undefined
          ? undefined
          : parseBody(await renderBody(config.body, sourceData, evaluate));
      return protocols.postgres(
        { url, body, credentials: input.systemCredentials, modify: input.modify },
        ctx,
      );
    }
    case 'ftp:':
    case 'ftps:':
    case 'sftp:': {
      const body =
        config.body === undefined
          ? undefined
          : parseBody(await renderBody(config.body, sourceData, evaluate));
      const call = { url, body, credentials: input.systemCredentials };
      return scheme === 'sftp:' ? protocols.sftp(call, ctx) : protocols.ftp(call, ctx);
    }
    default:
      throw new Error(
        `Unsupported URL scheme '${scheme}' in step ${input.stepId}: use http(s), postgres(ql), ftp(s) or sftp`,
      );
  }
}
