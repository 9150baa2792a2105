/**
 * Save-time semantic validation of a tool that already passed its zod schema: every piece of user
 * JavaScript compiles (nothing is run), every template parses, pagination settings make sense, JSON
 * Schemas compile and referenced systems exist. All problems are collected, so one save tells the
 * user everything that is wrong; each names the step (index and id) and the field.
 */

import { KG_ERR_TOOL_INVALID } from '../contract/api/errors.ts';
import type { Tool, ToolStep } from '../contract/api/tool.ts';
import type { JsonValue } from '../contract/json.ts';
import { checkJsonSchema } from '../engine/output-schema.ts';
import { PaginationError, parsePaginationSettings } from '../engine/pagination.ts';
import { literalScheme, STEP_URL_SCHEMES, UNSUPPORTED_SCHEME_HINT } from '../engine/request-step.ts';
import { checkSource } from '../engine/sandbox/sandbox.ts';
import { isPostgresStep, sqlBodyTemplateProblems } from '../engine/sql-templates.ts';
import { compileTemplate, TemplateError, type TemplateExpression } from '../engine/template.ts';

export interface ToolValidationOptions {
  /** Whether a system with this id exists (in any environment). */
  systemExists: (systemId: string) => Promise<boolean>;
  /** The base URLs of the system's variants (for steps relative to it); none when unknown. */
  systemUrls?: (systemId: string) => Promise<string[]>;
}

/** Throws KG_ERR_TOOL_INVALID (422) listing every problem of the tool; resolves when there is none. */
export async function validateToolDefinition(tool: Tool, opts: ToolValidationOptions): Promise<void> {
  const problems = await findToolProblems(tool, opts);
  if (problems.length > 0) throw KG_ERR_TOOL_INVALID(problems);
}

/**
 * Every problem of the tool, one message each (`steps[1] (shape).config.transformCode: …`), in
 * the order of the tool's fields. Also usable where a list is wanted (a resource's status condition).
 */
export async function findToolProblems(tool: Tool, opts: ToolValidationOptions): Promise<string[]> {
  const problems: string[] = [];
  const report = (field: string, message: string) => problems.push(`${field}: ${message}`);

  if (tool.inputSchema) checkSchema('inputSchema', tool.inputSchema, report);
  tool.steps.forEach((step, index) => {
    checkStep(`steps[${index}] (${step.id})`, step, report);
  });
  // An empty source means "none" to the engine (it skips falsy sources), so it is not an error here.
  if (tool.outputTransform) checkFunction('outputTransform', tool.outputTransform, report);
  if (tool.outputSchema) checkSchema('outputSchema', tool.outputSchema, report);

  const missing = await missingSystems(tool, opts.systemExists);
  tool.steps.forEach((step, index) => {
    const systemId = step.config.type === 'request' ? step.config.systemId : undefined;
    if (systemId !== undefined && missing.has(systemId)) {
      report(`steps[${index}] (${step.id}).config.systemId`, `system '${systemId}' does not exist`);
    }
  });
  for (const [index, step] of tool.steps.entries()) {
    const config = step.config;
    if (config.type !== 'request') continue;
    const urls = config.systemId && opts.systemUrls ? await opts.systemUrls(config.systemId) : [];
    if (!isPostgresStep(config, urls)) continue;
    for (const problem of sqlBodyTemplateProblems(config.body)) {
      report(`steps[${index}] (${step.id}).${problem.field}`, problem.message);
    }
  }
  return problems;
}

type Report = (field: string, message: string) => void;

function checkStep(prefix: string, step: ToolStep, report: Report): void {
  if (step.dataSelector) checkFunction(`${prefix}.dataSelector`, step.dataSelector, report);
  const config = step.config;
  if (config.type === 'transform') {
    checkFunction(`${prefix}.config.transformCode`, config.transformCode, report);
    return;
  }
  checkTemplate(`${prefix}.config.url`, config.url, report);
  checkUrlScheme(`${prefix}.config.url`, config.url, config.systemId, report);
  for (const [name, value] of Object.entries(config.headers ?? {})) {
    checkTemplate(`${prefix}.config.headers${key(name)}`, value, report);
  }
  for (const [name, value] of Object.entries(config.queryParams ?? {})) {
    checkTemplatesInValue(`${prefix}.config.queryParams${key(name)}`, value, report);
  }
  if (config.body !== undefined) checkTemplatesInValue(`${prefix}.config.body`, config.body, report);

  const pagination = config.pagination;
  if (pagination === undefined) return;
  if (pagination.type !== 'disabled') {
    try {
      parsePaginationSettings({
        type: pagination.type,
        ...(pagination.pageSize !== undefined ? { pageSize: pagination.pageSize } : {}),
        ...(pagination.cursorPath !== undefined ? { cursorPath: pagination.cursorPath } : {}),
        ...(pagination.maxPages !== undefined ? { maxPages: pagination.maxPages } : {}),
      });
    } catch (error) {
      if (!(error instanceof PaginationError)) throw error;
      report(`${prefix}.config.pagination`, error.message);
    }
  }
  // Checked even when pagination is disabled: the code is stored and may be switched on later.
  if (pagination.stopCondition?.trim()) {
    checkFunction(`${prefix}.config.pagination.stopCondition`, pagination.stopCondition, report);
  }
}

/**
 * The scheme selects the protocol, so a step whose URL names none (and has no system to be relative to)
 * or names one kubeglue cannot speak would fail every run: say so at save time. A URL that starts with an
 * expression supplies its scheme when it runs.
 */
function checkUrlScheme(field: string, url: string, systemId: string | undefined, report: Report): void {
  if (url.startsWith('<<')) return;
  const scheme = literalScheme(url);
  if (scheme === undefined) {
    if (systemId === undefined) {
      report(
        field,
        `'${url}' has no scheme and the step has no systemId: write a full URL (https://…, postgres://…, ` +
          "sftp://…) or set config.systemId to make it relative to that system's base URL",
      );
    }
    return;
  }
  if (!STEP_URL_SCHEMES.includes(scheme)) {
    report(field, `unsupported URL scheme '${scheme}': ${UNSUPPORTED_SCHEME_HINT}`);
  }
}

function checkFunction(field: string, source: string, report: Report): void {
  const result = checkSource(source);
  if (!result.ok) report(field, result.message);
}

function checkSchema(field: string, schema: Record<string, JsonValue>, report: Report): void {
  const failure = checkJsonSchema(schema);
  if (failure !== undefined) report(field, `not a valid JSON Schema: ${failure}`);
}

/** Parses one templated string and compile-checks each function-form expression in it. */
function checkTemplate(field: string, text: string, report: Report): void {
  let expressions: TemplateExpression[];
  try {
    expressions = compileTemplate(text).parts.filter(
      (part): part is TemplateExpression => part.kind !== 'text',
    );
  } catch (error) {
    if (!(error instanceof TemplateError)) throw error;
    report(field, error.message);
    return;
  }
  for (const expression of expressions) {
    if (expression.kind !== 'function') continue;
    const result = checkSource(expression.source);
    if (!result.ok) {
      report(
        field,
        `template expression at position ${expression.position} does not compile: ${result.message}`,
      );
    }
  }
}

/** Every string leaf of a JSON value (a body or a query value), each reported under its own path. */
function checkTemplatesInValue(field: string, value: JsonValue, report: Report): void {
  if (typeof value === 'string') checkTemplate(field, value, report);
  else if (Array.isArray(value)) {
    value.forEach((item, index) => {
      checkTemplatesInValue(`${field}[${index}]`, item, report);
    });
  } else if (value !== null && typeof value === 'object') {
    for (const [name, item] of Object.entries(value))
      checkTemplatesInValue(`${field}${key(name)}`, item, report);
  }
}

/** `.Authorization` for plain names, `["x y"]` for anything a reader could misparse. */
function key(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`;
}

/** The referenced system ids that do not exist; each id is looked up once. */
async function missingSystems(
  tool: Tool,
  systemExists: (systemId: string) => Promise<boolean>,
): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const step of tool.steps) {
    if (step.config.type === 'request' && step.config.systemId !== undefined) ids.add(step.config.systemId);
  }
  const verdicts = await Promise.all([...ids].map(async (id) => [id, await systemExists(id)] as const));
  return new Set(verdicts.filter(([, exists]) => !exists).map(([id]) => id));
}
