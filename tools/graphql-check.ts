/**
 * The save-time checks of a GraphQL step (`config.graphql`), part of the one tool validation
 * (validation.ts): the query is a document graphql-js parses (loaded with the first GraphQL step a process
 * checks), holding operations; the operation that runs is known (operationName names one of them, or there
 * is only one); no template builds the query (values go in variables); the variables
 * given are the operation's and its required ones are given; a mutation is marked `modify: true`; the step
 * is a POST over HTTP(S) without a body of its own; cursor pagination has its cursor variable declared.
 */
import type { RequestStepConfig } from '../contract/api/tool.ts';
import { literalScheme, stepScheme } from '../contract/step-protocols.ts';
import { graphqlTemplateProblems } from '../engine/graphql.ts';

export interface GraphqlProblem {
  /** The field below the step: `['config', 'graphql', 'query']`. */
  path: string[];
  message: string;
  line?: number;
  column?: number;
}

type Language = typeof import('graphql/language');
let language: Promise<Language> | undefined;
/** graphql-js's parser (its language module only): most processes never check a GraphQL step. */
const loadLanguage = (): Promise<Language> => {
  language ??= import('graphql/language');
  return language;
};

interface Operation {
  name: string | undefined;
  type: 'query' | 'mutation' | 'subscription';
  variables: Array<{ name: string; type: string; required: boolean }>;
}

function named(operation: Operation): string {
  return operation.name === undefined ? 'the anonymous operation' : `operation ${operation.name}`;
}

function names(operations: readonly Operation[]): string {
  return operations.map((operation) => operation.name ?? '(anonymous)').join(', ');
}

/** The schemes the step's requests can have: its URL's own, else its system's URLs' (a relative URL). */
function schemesOf(config: RequestStepConfig, systemUrls: readonly string[]): string[] {
  if (config.url.trim().startsWith('<<')) return [];
  const own = literalScheme(config.url);
  if (own) return [own];
  return systemUrls.flatMap((url) => literalScheme(url) ?? []);
}

/** Every problem of a GraphQL step (none for a step without `graphql`). */
export async function graphqlStepProblems(
  config: RequestStepConfig,
  modify: boolean,
  systemUrls: readonly string[],
): Promise<GraphqlProblem[]> {
  const problems: GraphqlProblem[] = [];
  const pagination = config.pagination;
  const request = config.graphql;
  if (!request) {
    if (pagination?.cursorVariable !== undefined || pagination?.connectionPath !== undefined) {
      const field = pagination.cursorVariable !== undefined ? 'cursorVariable' : 'connectionPath';
      problems.push({
        path: ['config', 'pagination', field],
        message: `${field} applies to GraphQL steps (config.graphql) only`,
      });
    }
    return problems;
  }
  if (config.body !== undefined) {
    problems.push({
      path: ['config', 'body'],
      message:
        'a GraphQL step sends {query, variables, operationName} of config.graphql as its body: remove body',
    });
  }
  if (config.method !== 'POST') {
    problems.push({
      path: ['config', 'method'],
      message: `a GraphQL step is sent as POST with a JSON body, not ${config.method}: set "method": "POST"`,
    });
  }
  for (const scheme of new Set(schemesOf(config, systemUrls))) {
    const protocol = stepScheme(scheme)?.protocol;
    if (protocol !== undefined && protocol !== 'http') {
      problems.push({
        path: ['config', 'graphql'],
        message: `GraphQL is sent over HTTP(S); this step's URL is ${scheme}//`,
      });
    }
  }
  if (pagination?.cursorPath?.trim() && pagination.connectionPath !== undefined) {
    problems.push({
      path: ['config', 'pagination', 'connectionPath'],
      message:
        'give either cursorPath (a cursor anywhere in the data) or connectionPath (a connection with pageInfo), not both',
    });
  }
  const templates = graphqlTemplateProblems(request);
  for (const problem of templates) {
    problems.push({ path: problem.field.split('.'), message: problem.message });
  }
  if (templates.length > 0) return problems;

  const operations = await parseOperations(request.query, problems);
  if (!operations) return problems;
  const operation = chosenOperation(operations, request.operationName, problems);
  if (!operation) return problems;

  if (operation.type === 'subscription') {
    problems.push({
      path: ['config', 'graphql', 'query'],
      message: `${named(operation)} is a subscription: a step sends one request and reads one answer (queries and mutations only)`,
    });
  }
  if (operation.type === 'mutation' && !modify) {
    problems.push({
      path: ['modify'],
      message:
        `${named(operation)} is a mutation: set "modify": true on the step (a step with modify false is retried ` +
        'after a failed attempt, and a mutation sent twice may change data twice)',
    });
  }
  const cursorVariable =
    pagination?.type === 'cursorBased' ? (pagination.cursorVariable ?? 'after') : undefined;
  checkVariables(operation, request.variables ?? {}, cursorVariable, problems);
  if (cursorVariable !== undefined && !operation.variables.some((v) => v.name === cursorVariable)) {
    problems.push({
      path: ['config', 'pagination'],
      message:
        `the cursor goes in $${cursorVariable}, which ${named(operation)} does not declare: declare it and pass it ` +
        `to the paginated field (query ($${cursorVariable}: String) { items(after: $${cursorVariable}) { … } }), or ` +
        'set pagination.cursorVariable to the variable that takes the cursor',
    });
  }
  return problems;
}

/** The document's operations, or undefined (with the problem) when it does not parse or holds none. */
async function parseOperations(query: string, problems: GraphqlProblem[]): Promise<Operation[] | undefined> {
  const { parse, print } = await loadLanguage();
  const path = ['config', 'graphql', 'query'];
  let document: ReturnType<typeof parse>;
  try {
    document = parse(query);
  } catch (error) {
    // A syntax error is a GraphQLError (matched by name: only the language module is loaded).
    if (!(error instanceof Error) || error.name !== 'GraphQLError') throw error;
    const location = (error as { locations?: ReadonlyArray<{ line: number; column: number }> })
      .locations?.[0];
    problems.push({
      path,
      message: `the query does not parse: ${error.message}${location ? ` (line ${location.line}, column ${location.column})` : ''}`,
      ...(location ? { line: location.line, column: location.column } : {}),
    });
    return undefined;
  }
  const operations: Operation[] = [];
  for (const definition of document.definitions) {
    if (definition.kind === 'FragmentDefinition') continue;
    if (definition.kind !== 'OperationDefinition') {
      const at = definition.loc ? definition.loc.startToken : undefined;
      problems.push({
        path,
        message:
          `the query holds a ${definition.kind.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()} (schema ` +
          'language): a step sends operations (query, mutation)',
        ...(at ? { line: at.line, column: at.column } : {}),
      });
      return undefined;
    }
    operations.push({
      name: definition.name?.value,
      type: definition.operation as Operation['type'],
      variables: (definition.variableDefinitions ?? []).map((variable) => ({
        name: variable.variable.name.value,
        type: print(variable.type),
        required: variable.type.kind === 'NonNullType' && variable.defaultValue === undefined,
      })),
    });
  }
  if (operations.length === 0) {
    problems.push({ path, message: 'the query holds no operation (query { … } or mutation { … })' });
    return undefined;
  }
  return operations;
}

function chosenOperation(
  operations: readonly Operation[],
  operationName: string | undefined,
  problems: GraphqlProblem[],
): Operation | undefined {
  if (operationName !== undefined) {
    const operation = operations.find((candidate) => candidate.name === operationName);
    if (!operation) {
      problems.push({
        path: ['config', 'graphql', 'operationName'],
        message: `'${operationName}' is not an operation of the query (it holds ${names(operations)})`,
      });
    }
    return operation;
  }
  if (operations.length > 1) {
    problems.push({
      path: ['config', 'graphql', 'operationName'],
      message: `the query holds ${operations.length} operations (${names(operations)}): set operationName to the one to run`,
    });
    return undefined;
  }
  return operations[0];
}

/** Variables given must be declared; required ones must be given (the cursor variable is the engine's). */
function checkVariables(
  operation: Operation,
  given: Record<string, unknown>,
  cursorVariable: string | undefined,
  problems: GraphqlProblem[],
): void {
  const declared = new Set(operation.variables.map((variable) => variable.name));
  for (const name of Object.keys(given)) {
    if (declared.has(name)) continue;
    problems.push({
      path: ['config', 'graphql', 'variables', name],
      message:
        `$${name} is not a variable of ${named(operation)} (it declares ` +
        `${declared.size > 0 ? [...declared].map((v) => `$${v}`).join(', ') : 'none'})`,
    });
  }
  for (const variable of operation.variables) {
    if (!variable.required || variable.name === cursorVariable || Object.hasOwn(given, variable.name))
      continue;
    problems.push({
      path: ['config', 'graphql', 'variables'],
      message: `${named(operation)} requires $${variable.name} (${variable.type}): give it in variables`,
    });
  }
}
