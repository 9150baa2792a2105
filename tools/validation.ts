/**
 * The one validation of a tool, for a REST save and for a Tool resource applied with kubectl alike
 * (`checkTool`): first its schema (fields and their shapes, unique step ids, no reserved step id, no
 * step id shadowing an input), then, when the shape holds, the semantic checks: every piece of user
 * JavaScript compiles (nothing is run), every template parses, pagination settings make sense, JSON
 * Schemas compile and referenced systems exist. All problems are collected, so one save tells the
 * user everything that is wrong; each names its field (and the step's id for the semantic ones).
 * Clusters without CEL (before 1.25) check nothing of this at the API server: the Tool reconciler's
 * call of checkTool is what refuses a broken Tool there.
 */

import {
  formatIssuePath,
  KG_ERR_PROTOCOL_UNSUPPORTED,
  KG_ERR_TOOL_INVALID,
  type ToolProblem,
} from '../contract/api/errors.ts';
import { Tool, type ToolStep } from '../contract/api/tool.ts';
import { zodIssues } from '../contract/format-issues.ts';
import type { JsonValue } from '../contract/json.ts';
import { literalScheme, schemeProblem } from '../contract/step-protocols.ts';
import { checkJsonSchema } from '../engine/json-schema.ts';
import { PaginationError, parsePaginationSettings } from '../engine/pagination.ts';
import { isRedisStep, redisBodyTemplateProblems } from '../engine/redis-templates.ts';
import { checkSource } from '../engine/sandbox/sandbox.ts';
import { sqlBodyTemplateProblems, sqlStepDialect } from '../engine/sql-templates.ts';
import { compileTemplate, TemplateError, type TemplateExpression } from '../engine/template.ts';
import { graphqlStepProblems } from './graphql-check.ts';

export interface ToolValidationOptions {
  /** Whether a system with this id exists (in any environment). */
  systemExists: (systemId: string) => Promise<boolean>;
  /** The base URLs of the system's variants (for steps relative to it); none when unknown. */
  systemUrls?: (systemId: string) => Promise<string[]>;
}

export interface ToolCheckOptions extends ToolValidationOptions {
  /**
   * Called with the parsed tool before any system is looked up; throws to refuse it (a key that may
   * not use a system must not learn from the answer whether that system exists).
   */
  authorize?: (tool: Tool) => void;
}

/** What checkTool found: the tool as parsed (undefined when its shape is wrong) and every problem. */
export interface ToolCheck {
  tool: Tool | undefined;
  problems: ToolProblem[];
}

/**
 * The check of a tool from anywhere (a REST body, a Tool resource's spec): never throws on a malformed
 * tool, whatever fields it lacks; every problem comes back with a message naming its field.
 */
export async function checkTool(input: unknown, opts: ToolCheckOptions): Promise<ToolCheck> {
  const parsed = Tool.safeParse(input);
  if (!parsed.success) {
    const problems = zodIssues(parsed.error, undefined, Tool).map((issue) => ({
      ...issue,
      field: formatIssuePath(issue.path),
    }));
    return { tool: undefined, problems };
  }
  opts.authorize?.(parsed.data);
  return { tool: parsed.data, problems: await toolProblems(parsed.data, opts) };
}

/** `field: message`: how a problem reads in a message (the 422's, a Tool's Ready condition). */
export function problemLine(problem: Pick<ToolProblem, 'field' | 'message'>): string {
  return `${problem.field}: ${problem.message}`;
}

/**
 * Throws KG_ERR_TOOL_INVALID (422) listing every problem of the tool, or KG_ERR_PROTOCOL_UNSUPPORTED when a
 * step speaks a protocol kubeglue does not (the same list); resolves with the parsed tool.
 */
export async function validateToolDefinition(input: unknown, opts: ToolCheckOptions): Promise<Tool> {
  const { tool, problems } = await checkTool(input, opts);
  if (problems.some((problem) => problem.unsupportedScheme)) throw KG_ERR_PROTOCOL_UNSUPPORTED(problems);
  if (!tool || problems.length > 0) throw KG_ERR_TOOL_INVALID(problems);
  return tool;
}

/**
 * Every problem of the tool, one message each (`steps[1] (shape).config.transformCode: …`), in
 * the order of the tool's fields. Also usable where a list is wanted (a resource's status condition).
 */
export async function findToolProblems(tool: Tool, opts: ToolValidationOptions): Promise<string[]> {
  return (await toolProblems(tool, opts)).map(problemLine);
}

/**
 * Every problem of the tool at its field: the path (`['steps', 1, 'config', 'transformCode']`), the field as
 * people read it (with the step's id) and, for code that does not compile, the line and column in it.
 */
export async function toolProblems(tool: Tool, opts: ToolValidationOptions): Promise<ToolProblem[]> {
  const problems: ToolProblem[] = [];
  const report: Report = (field, message, where) =>
    problems.push({ path: field.path, field: field.label, message, ...where });

  if (tool.inputSchema) checkSchema(root('inputSchema'), tool.inputSchema, report);
  tool.steps.forEach((step, index) => {
    checkStep(stepField(index, step.id), step, report);
  });
  // An empty source means "none" to the engine (it skips falsy sources), so it is not an error here.
  if (tool.outputTransform) checkFunction(root('outputTransform'), tool.outputTransform, report);
  if (tool.outputSchema) checkSchema(root('outputSchema'), tool.outputSchema, report);

  const missing = await missingSystems(tool, opts.systemExists);
  tool.steps.forEach((step, index) => {
    const systemId = step.config.type === 'request' ? step.config.systemId : undefined;
    if (systemId !== undefined && missing.has(systemId)) {
      report(at(stepField(index, step.id), 'config', 'systemId'), `system '${systemId}' does not exist`);
    }
  });
  for (const [index, step] of tool.steps.entries()) {
    const config = step.config;
    if (config.type !== 'request') continue;
    const urls = config.systemId && opts.systemUrls ? await opts.systemUrls(config.systemId) : [];
    if (literalScheme(config.url) === undefined && !config.url.startsWith('<<')) {
      // A relative URL speaks its system's protocol: an mssql:// system's steps cannot run either.
      for (const scheme of new Set(urls.map(literalScheme))) {
        const problem = scheme && schemeProblem(scheme);
        if (problem) {
          report(
            at(stepField(index, step.id), 'config', 'systemId'),
            `system '${config.systemId}': ${problem}`,
            {
              unsupportedScheme: scheme,
            },
          );
        }
      }
    }
    for (const problem of await graphqlStepProblems(config, step.modify, urls)) {
      const { path, message, ...where } = problem;
      report(at(stepField(index, step.id), ...path), message, where);
    }
    const dialect = sqlStepDialect(config, urls);
    const bodyProblems = dialect
      ? sqlBodyTemplateProblems(config.body, dialect)
      : isRedisStep(config, urls)
        ? redisBodyTemplateProblems(config.body)
        : [];
    for (const problem of bodyProblems) {
      report(at(stepField(index, step.id), ...problem.field.split('.')), problem.message);
    }
  }
  return problems;
}

/** A field of the tool: its path, and how messages name it. */
interface Field {
  path: Array<string | number>;
  label: string;
}

type Report = (
  field: Field,
  message: string,
  where?: { line?: number; column?: number; unsupportedScheme?: string },
) => void;

const root = (name: string): Field => ({ path: [name], label: name });

/** `steps[1] (shape)`: the index locates the step, its id tells people which one it is. */
const stepField = (index: number, id: string): Field => ({
  path: ['steps', index],
  label: `steps[${index}] (${id})`,
});

/** A field below another: `.name` for plain names, `["x y"]` for anything a reader could misparse. */
function at(field: Field, ...parts: Array<string | number>): Field {
  let label = field.label;
  for (const part of parts) {
    label +=
      typeof part === 'number'
        ? `[${part}]`
        : /^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(part)
          ? `.${part}`
          : `[${JSON.stringify(part)}]`;
  }
  return { path: [...field.path, ...parts], label };
}

function checkStep(prefix: Field, step: ToolStep, report: Report): void {
  if (step.dataSelector) checkFunction(at(prefix, 'dataSelector'), step.dataSelector, report);
  const config = step.config;
  if (config.type === 'transform') {
    checkFunction(at(prefix, 'config', 'transformCode'), config.transformCode, report);
    return;
  }
  checkTemplate(at(prefix, 'config', 'url'), config.url, report);
  checkUrlScheme(at(prefix, 'config', 'url'), config.url, config.systemId, report);
  for (const [name, value] of Object.entries(config.headers ?? {})) {
    checkTemplate(at(prefix, 'config', 'headers', name), value, report);
  }
  for (const [name, value] of Object.entries(config.queryParams ?? {})) {
    checkTemplatesInValue(at(prefix, 'config', 'queryParams', name), value, report);
  }
  if (config.body !== undefined) checkTemplatesInValue(at(prefix, 'config', 'body'), config.body, report);

  const pagination = config.pagination;
  if (pagination === undefined) return;
  if (pagination.type !== 'disabled') {
    try {
      parsePaginationSettings({
        type: pagination.type,
        ...(pagination.pageSize !== undefined ? { pageSize: pagination.pageSize } : {}),
        ...(pagination.cursorPath !== undefined ? { cursorPath: pagination.cursorPath } : {}),
        ...(pagination.maxPages !== undefined ? { maxPages: pagination.maxPages } : {}),
        // A GraphQL step pages through a connection's pageInfo when it has no cursorPath.
        ...(config.graphql ? { connection: { path: null } } : {}),
      });
    } catch (error) {
      if (!(error instanceof PaginationError)) throw error;
      report(at(prefix, 'config', 'pagination'), error.message);
    }
  }
  // Checked even when pagination is disabled: the code is stored and may be switched on later.
  if (pagination.stopCondition?.trim()) {
    checkFunction(at(prefix, 'config', 'pagination', 'stopCondition'), pagination.stopCondition, report);
  }
}

/**
 * The scheme selects the protocol, so a step whose URL names none (and has no system to be relative to)
 * or names one kubeglue cannot speak would fail every run: say so at save time. A URL that starts with an
 * expression supplies its scheme when it runs.
 */
function checkUrlScheme(field: Field, url: string, systemId: string | undefined, report: Report): void {
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
  const problem = schemeProblem(scheme);
  if (problem) report(field, problem, { unsupportedScheme: scheme });
}

function checkFunction(field: Field, source: string, report: Report): void {
  const result = checkSource(source);
  if (!result.ok) {
    report(field, result.message, {
      ...(result.line !== undefined ? { line: result.line } : {}),
      ...(result.column !== undefined ? { column: result.column } : {}),
    });
  }
}

function checkSchema(field: Field, schema: Record<string, JsonValue>, report: Report): void {
  const failure = checkJsonSchema(schema);
  if (failure !== undefined) report(field, `not a valid JSON Schema: ${failure}`);
}

/** Parses one templated string and compile-checks each function-form expression in it. */
function checkTemplate(field: Field, text: string, report: Report): void {
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
function checkTemplatesInValue(field: Field, value: JsonValue, report: Report): void {
  if (typeof value === 'string') checkTemplate(field, value, report);
  else if (Array.isArray(value)) {
    value.forEach((item, index) => {
      checkTemplatesInValue(at(field, index), item, report);
    });
  } else if (value !== null && typeof value === 'object') {
    for (const [name, item] of Object.entries(value)) checkTemplatesInValue(at(field, name), item, report);
  }
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
