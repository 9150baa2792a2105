import type { StepPagination } from '../contract/api/run.ts';
import type { RequestStepConfig } from '../contract/api/tool.ts';
import type { JsonObject, JsonValue } from '../contract/json.ts';
import { literalScheme, schemeProblem, stepScheme } from '../contract/step-protocols.ts';
import type { ResolvedSystem } from '../contract/wire/run-order.ts';
import { type CredentialView, codeAccessMessage, hasCodeAccess, requestView } from './credential-views.ts';
import type { CredentialScope } from './credentials.ts';
import { gatewayRouteFor } from './gateway-route.ts';
import {
  GRAPHQL_ACCEPT,
  graphqlBody,
  graphqlData,
  graphqlStatusError,
  graphqlTemplateProblems,
} from './graphql.ts';
import { parseConnectionPath } from './graphql-connection.ts';
import {
  IDENTITY_TOKEN_PLACEHOLDER,
  type IdentityTokens,
  namesIdentityToken,
  stepNamesIdentityToken,
  withoutIdentityToken,
} from './identity-tokens.ts';
import type { TokenKeeper } from './managed-tokens.ts';
import { describeOrigins, originOf, systemOrigins } from './origins.ts';
import { createPaginator, type PaginationConfig } from './pagination.ts';
import { isJsonObject } from './paths.ts';
import { redisBodyTemplateProblems, redisTemplateError } from './redis-templates.ts';
import { OpenSpan } from './spans.ts';
import { sqlBodyTemplateProblems, sqlTemplateError } from './sql-templates.ts';
import { applySystemAuth } from './system-auth.ts';
import {
  compileTemplate,
  renderBody,
  renderHeaders,
  renderQuery,
  renderScalar,
  resolveExpression,
  type Evaluate as TemplateEvaluate,
  undefinedVariableOf,
} from './template.ts';
import type { EngineEvent, GatewayRoute, HttpCall, HttpReply, ProtocolContext, Protocols } from './types.ts';
import { leadingExpression, renderStepUrl } from './url-template.ts';

const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

function withGateway(system: ResolvedSystem | undefined, url: string): { gateway?: GatewayRoute } {
  const gateway = gatewayRouteFor(system, url);
  return gateway ? { gateway } : {};
}
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

export interface RequestStepInput {
  stepId: string;
  config: RequestStepConfig;
  modify: boolean;
  /** sourceData without credentials: payload, step envelopes, currentItem. */
  sourceData: JsonObject;
  system: ResolvedSystem | undefined;
  /** The run's credentials; the step sees those of `candidates` whose origin its URL has. */
  scope: CredentialScope;
  /** Systems whose credentials this step may see at all (its own system, or all of the tool's). */
  candidates: readonly string[];
  /** For functions that see no credentials (the stopCondition). */
  evaluate: TemplateEvaluate;
  /** For template functions that see `view` of the credentials (guards, isolation: credential-views.ts). */
  evaluateWith: (view: CredentialView) => TemplateEvaluate;
  protocols: Protocols;
  ctx: ProtocolContext;
  onEvent: (event: EngineEvent) => void;
  /** Something the user should know that does not fail the step (it goes into the step result). */
  onNote: (note: string) => void;
  /** How a paginated request's pagination ended (it goes into the step result). */
  onPagination?: ((summary: StepPagination) => void) | undefined;
  /** OAuth access tokens of tokenManaged systems (managed-tokens.ts). */
  tokens?: TokenKeeper | undefined;
  /** The run's outbound identity tokens (identity-tokens.ts). */
  identity?: IdentityTokens | undefined;
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

/** Where a request goes, and which systems' credentials may go with it. */
interface Target {
  url: string;
  /** Systems (of the candidates) whose origins include the URL's origin. */
  allowed: string[];
  /** sourceData for the rest of the request: the allowed systems' credentials added. */
  sourceData: JsonObject;
  /** Evaluates the rest of the request's template functions with the allowed systems' credentials. */
  evaluate: TemplateEvaluate;
}

function originsOf(input: RequestStepInput, id: string): Set<string> {
  const system = input.scope.bySystem.get(id)?.system;
  return system ? systemOrigins(system) : new Set();
}

/**
 * A template that names a credential of a system whose origin this request does not have gets a message
 * that says so, rather than "not defined".
 */
function explainWithheld(error: unknown, input: RequestStepInput, origin: string | undefined): unknown {
  const name = undefinedVariableOf(error);
  if (name === undefined) return error;
  for (const id of input.candidates) {
    const entry = input.scope.bySystem.get(id);
    if (!entry) continue;
    if (!Object.keys(entry.values).some((key) => name === `${id}_${key}`)) continue;
    return new Error(
      `Template variable '${name}' is a credential of system '${id}', which is not sent to ${origin ?? 'this URL'}: ` +
        `it is not one of the system's origins (${describeOrigins(originsOf(input, id))}); ` +
        `list it in the system's extraOrigins to allow it`,
    );
  }
  return error;
}

/**
 * Where the candidate systems are, for the expression that may supply a URL's origin: `<id>_url`, the
 * base URL, or for a system without one (a dataStore) its `url` credential, a connection URL. A function
 * sees that credential only when the system has codeAccess (it decides where the request goes, before
 * any origin is known); `<<db_url>>` as a name runs no code and always works.
 */
function locations(input: RequestStepInput, forCode: boolean): CredentialView {
  const data = input.scope.urlsFor(input.candidates);
  const guarded: CredentialView['guarded'] = [];
  for (const id of input.candidates) {
    const entry = input.scope.bySystem.get(id);
    if (!entry || entry.system.url || !entry.values.url) continue;
    if (!forCode || hasCodeAccess(input.scope, id)) data[`${id}_url`] = entry.values.url;
    else guarded.push({ path: [`${id}_url`], message: codeAccessMessage(id, 'url') });
  }
  return { data, guarded, exposes: [] };
}

/** Whether `text` holds a credential value of the system (values too short to tell are not looked for). */
function carriesCredentialOf(input: RequestStepInput, id: string, text: string): boolean {
  const values = Object.values(input.scope.bySystem.get(id)?.values ?? {});
  return values.some((value) => value.length >= 4 && text.includes(value));
}

/**
 * Resolves the URL. Its origin is decided first, by the literal text and the leading expression (which
 * sees where systems are, no other credential); the rest of the URL, the headers, the query and the
 * body may then use the credentials of the systems whose origins include it, and no others.
 */
async function resolveTarget(input: RequestStepInput, data: JsonObject): Promise<Target> {
  const { config, scope, system, stepId } = input;
  const lead = leadingExpression(config.url);
  let leading: string | undefined;
  if (lead) {
    const where = locations(input, lead.kind === 'function');
    leading = renderScalar(
      await resolveExpression(lead, { ...data, ...where.data }, input.evaluateWith(where)),
    );
  }
  // Later expressions cannot change the authority (they are encoded, or refused inside it), so a
  // placeholder in their place shows the origin.
  const skeleton = compileTemplate(config.url)
    .parts.map((part, index) => (part.kind === 'text' ? part.text : index === 0 ? (leading ?? '') : 'x'))
    .join('');
  const origin = originOf(absoluteUrl(skeleton, system, stepId));
  let allowed = input.candidates.filter((id) => origin !== undefined && originsOf(input, id).has(origin));
  // A connection URL seen by the leading expression must not travel to another origin inside the URL.
  const smuggled =
    leading === undefined
      ? undefined
      : input.candidates.find((id) => !allowed.includes(id) && carriesCredentialOf(input, id, leading));
  if (smuggled !== undefined) {
    throw new Error(
      `the URL carries a credential of system '${smuggled}' to ${origin ?? 'an unknown origin'}, which is not one ` +
        `of its origins (${describeOrigins(originsOf(input, smuggled))})`,
    );
  }
  const view = requestView(scope, input.candidates, allowed, origin ?? 'this URL');
  const sourceData = { ...data, ...view.data };
  const evaluate = input.evaluateWith(view);
  let url: string;
  try {
    url = absoluteUrl(await renderStepUrl(config.url, sourceData, evaluate, { leading }), system, stepId);
  } catch (error) {
    throw explainWithheld(error, input, origin);
  }
  const finalOrigin = originOf(url);
  if (finalOrigin !== origin) {
    const still = allowed.filter((id) => finalOrigin !== undefined && originsOf(input, id).has(finalOrigin));
    if (still.length !== allowed.length) {
      throw new Error(
        `the URL's origin changed while it was rendered (${origin ?? '?'} → ${finalOrigin ?? '?'}); ` +
          'credentials are only sent to an origin the URL names up front',
      );
    }
    allowed = still;
  }
  if (system && !allowed.includes(system.id)) {
    input.onNote(
      `the credentials of system '${system.id}' were not sent: ${finalOrigin ?? url} is not one of its origins ` +
        `(${describeOrigins(originsOf(input, system.id))}); list it in the system's extraOrigins to send them there`,
    );
  }
  return { url, allowed, sourceData, evaluate };
}

function renderBodyText(body: JsonValue): string {
  return typeof body === 'string' ? body : JSON.stringify(body);
}

/** Names whose rendered value contains a credential of the run. */
function carrying(entries: Iterable<[string, string]>, input: RequestStepInput): string[] {
  const redactor = input.scope.redactor;
  return [...entries].filter(([, value]) => redactor.string(value) !== value).map(([name]) => name);
}

/** The variable a GraphQL step's cursor goes into, when it pages by cursor. */
function cursorVariableOf(config: RequestStepInput['config']): string | undefined {
  if (!config.graphql || config.pagination?.type !== 'cursorBased') return undefined;
  return config.pagination.cursorVariable ?? 'after';
}

/**
 * A GraphQL step's JSON body: its variables rendered (templates fill values only), and the cursor of a
 * cursor-paginated step in its variable (left out while there is none: the first page).
 */
async function graphqlRequestBody(
  input: RequestStepInput,
  data: JsonObject,
  target: Target,
): Promise<JsonObject> {
  const request = input.config.graphql as NonNullable<RequestStepInput['config']['graphql']>;
  const rendered = await renderBody(request.variables ?? {}, target.sourceData, target.evaluate);
  const variables: JsonObject = isJsonObject(rendered) ? rendered : {};
  const cursorVariable = cursorVariableOf(input.config);
  if (cursorVariable !== undefined) {
    const cursor = data.cursor ?? null;
    if (cursor === null) delete variables[cursorVariable];
    else variables[cursorVariable] = cursor;
  }
  return graphqlBody(request, variables);
}

function hasHeader(headers: Record<string, string>, name: string): boolean {
  return Object.keys(headers).some((key) => key.toLowerCase() === name);
}

/**
 * The target with the identity token bound for its origin, when the step names it (identity-tokens.ts):
 * the audience is the origin the URL names, so the token is good there only.
 */
async function withIdentity(input: RequestStepInput, target: Target): Promise<Target> {
  if (!stepNamesIdentityToken(input.config)) return target;
  if (!input.identity) throw new Error(`${IDENTITY_TOKEN_PLACEHOLDER} is not available to this run`);
  const audience = new URL(target.url).origin;
  return {
    ...target,
    sourceData: { ...target.sourceData, ...(await input.identity.sourceData(audience)) },
    evaluate: withoutIdentityToken(target.evaluate),
  };
}

async function httpCall(input: RequestStepInput, data: JsonObject): Promise<HttpCall> {
  const { config, system } = input;
  const target = await withIdentity(input, await resolveTarget(input, data));
  const evaluate = target.evaluate;
  const origin = originOf(target.url);
  let headers: Record<string, string>;
  let query: Array<[string, string]>;
  let body: JsonValue | undefined;
  const hasBody = config.body !== undefined && config.method !== 'GET' && config.method !== 'HEAD';
  try {
    headers = config.headers ? await renderHeaders(config.headers, target.sourceData, evaluate) : {};
    query = config.queryParams ? await renderQuery(config.queryParams, target.sourceData, evaluate) : [];
    if (config.graphql) body = await graphqlRequestBody(input, data, target);
    else body = hasBody ? await renderBody(config.body as JsonValue, target.sourceData, evaluate) : undefined;
  } catch (error) {
    throw explainWithheld(error, input, origin);
  }
  if (config.graphql) {
    if (!hasHeader(headers, 'content-type')) headers['Content-Type'] = 'application/json';
    if (!hasHeader(headers, 'accept')) headers.Accept = GRAPHQL_ACCEPT;
  }
  // A GraphQL request is a POST whatever the step says (saving refuses another method).
  const method = config.graphql ? 'POST' : config.method;
  const credentialHeaders = carrying(Object.entries(headers), input);
  const credentialQueryParams = carrying(query, input);
  if (system && target.allowed.includes(system.id)) {
    const values = input.scope.bySystem.get(system.id)?.values ?? {};
    const added = applySystemAuth(system, values, headers, query);
    credentialHeaders.push(...added.headers);
    credentialQueryParams.push(...added.query);
  }
  return {
    method,
    url: target.url,
    headers,
    query,
    body,
    retry: !input.modify || IDEMPOTENT_METHODS.has(method),
    credentialHeaders,
    credentialQueryParams,
    ...(body !== undefined && carrying([['body', renderBodyText(body)]], input).length > 0
      ? { credentialBody: true }
      : {}),
    ...(system?.allowedNetworks?.length ? { allowedNetworks: system.allowedNetworks } : {}),
    ...withGateway(system, target.url),
  };
}

/**
 * One HTTP request. A tokenManaged system's token is made current first, and a 401 to a request that
 * carried it is answered by one new token and one more try (an expired or revoked token mid-run).
 */
async function send(input: RequestStepInput, data: JsonObject, ctx: ProtocolContext): Promise<HttpReply> {
  const { system, tokens } = input;
  const managed = system?.tokenManaged === true && tokens !== undefined;
  if (managed) await tokens.ensure(system.id);
  const call = await httpCall(input, data);
  try {
    return await input.protocols.http(call, ctx);
  } catch (error) {
    const status = (error as { status?: unknown }).status;
    if (!managed || status !== 401 || !call.credentialHeaders?.length) throw error;
    if (!(await tokens.replace(system.id))) throw error;
    return input.protocols.http(await httpCall(input, data), ctx);
  }
}

/**
 * One request and its answer's data, redacted: what a server answers may echo a credential (an API that
 * returns the request), so it is redacted before anything else of the run sees it (stopCondition,
 * cursors, later steps). A GraphQL step's data is the answer's `data` (graphql.ts).
 */
async function fetchData(
  input: RequestStepInput,
  data: JsonObject,
  ctx: ProtocolContext,
): Promise<{ data: JsonValue; headers: Record<string, string> }> {
  const redactor = input.scope.redactor;
  let reply: HttpReply;
  try {
    reply = await send(input, data, ctx);
  } catch (error) {
    throw (input.config.graphql && graphqlStatusError(error)) || error;
  }
  const answer = redactor.value(reply.data);
  return {
    data: input.config.graphql ? graphqlData(answer, input.onNote) : answer,
    headers: redactor.value(reply.headers),
  };
}

/** The paginator's settings from the step's (a GraphQL step pages through a connection without cursorPath). */
function paginationConfig(config: RequestStepInput['config']): PaginationConfig {
  const { type, cursorVariable, connectionPath, ...rest } = config.pagination as NonNullable<
    RequestStepInput['config']['pagination']
  >;
  if (type === 'disabled') throw new Error('pagination is disabled');
  if (!config.graphql) return { ...rest, type };
  return {
    ...rest,
    type,
    cursorVariable: cursorVariable ?? 'after',
    ...(rest.cursorPath?.trim() ? {} : { connection: { path: parseConnectionPath(connectionPath) } }),
  };
}

async function runHttp(input: RequestStepInput): Promise<JsonValue> {
  const { config } = input;
  const ctx: ProtocolContext = {
    ...input.ctx,
    onRetry: (retry) => input.onEvent({ type: 'retry', stepId: input.stepId, ...retry }),
  };
  const pagination = config.pagination;
  if (!pagination || pagination.type === 'disabled') {
    return (await fetchData(input, input.sourceData, ctx)).data;
  }
  const paginator = createPaginator(paginationConfig(config), {
    evaluate: input.evaluate,
    sourceData: input.sourceData,
  });
  for (let page = 1; ; page += 1) {
    ctx.signal.throwIfAborted();
    const variables = paginator.variables();
    const exchange = ctx.exchange ? { exchange: { ...ctx.exchange, page } } : {};
    // A page of a traced run is a span of its own, in its step's (or loop item's): its request's parent.
    const span = ctx.spanId !== undefined ? new OpenSpan('page', ctx.spanId, input.stepId, page) : undefined;
    let outcome: Awaited<ReturnType<typeof paginator.accept>>;
    try {
      outcome = await paginator.accept(
        await fetchData(
          input,
          { ...input.sourceData, ...variables },
          { ...ctx, ...exchange, ...(span ? { spanId: span.spanId } : {}) },
        ),
      );
    } catch (error) {
      if (span) input.onEvent(span.end(true));
      throw error;
    }
    if (span) input.onEvent(span.end(false));
    input.onEvent({
      type: 'page_fetched',
      stepId: input.stepId,
      page: variables.page,
      totalFetched: paginator.totalFetched(),
    });
    if (outcome.done) {
      const summary = paginator.summary();
      if (summary) input.onPagination?.(summary);
      return paginator.result();
    }
  }
}

/** The scheme without rendering when it is literal text, so HTTP templates render once per request. */
async function schemeOf(input: RequestStepInput): Promise<string> {
  const literal = literalScheme(input.config.url);
  if (literal) return literal;
  if (!input.config.url.startsWith('<<') && input.system?.url) return new URL(input.system.url).protocol;
  const target = await resolveTarget({ ...input, onNote: () => {} }, input.sourceData);
  return new URL(target.url).protocol;
}

/** Renders a request step and sends it through the protocol its URL scheme selects. */
export async function runRequestStep(input: RequestStepInput): Promise<JsonValue> {
  const { config, protocols, ctx, system } = input;
  const scheme = await schemeOf(input);
  const protocol = stepScheme(scheme)?.protocol;
  if (protocol === undefined) throw new Error(`Step ${input.stepId}: ${schemeProblem(scheme)}`);
  if (config.graphql) {
    if (protocol !== 'http') {
      throw new Error(`a GraphQL request is sent over HTTP(S); this step's URL is ${scheme}//`);
    }
    const problems = graphqlTemplateProblems(config.graphql);
    if (problems.length > 0) throw new Error(problems.map((p) => `${p.field}: ${p.message}`).join('; '));
  }
  if (protocol === 'http') return runHttp(input);
  if (namesIdentityToken(config.body)) {
    throw new Error(
      `${IDENTITY_TOKEN_PLACEHOLDER} is sent in HTTP(S) requests only; this step's URL is ${scheme}//`,
    );
  }
  if (protocol === 'postgres' || protocol === 'mysql') {
    const problems = sqlBodyTemplateProblems(config.body, protocol);
    if (problems.length > 0) throw sqlTemplateError(problems);
  }
  if (protocol === 'redis') {
    const problems = redisBodyTemplateProblems(config.body);
    if (problems.length > 0) throw redisTemplateError(problems);
  }
  const target = await resolveTarget(input, input.sourceData);
  let body: unknown;
  try {
    body =
      config.body === undefined
        ? undefined
        : parseBody(await renderBody(config.body, target.sourceData, target.evaluate));
  } catch (error) {
    throw explainWithheld(error, input, originOf(target.url));
  }
  const credentials =
    system && target.allowed.includes(system.id) ? { ...input.scope.bySystem.get(system.id)?.values } : {};
  const call = {
    url: target.url,
    body,
    credentials,
    modify: input.modify,
    ...(system?.allowedNetworks?.length ? { allowedNetworks: system.allowedNetworks } : {}),
    ...withGateway(system, target.url),
  };
  return input.scope.redactor.value(await protocols[protocol](call, ctx));
}
