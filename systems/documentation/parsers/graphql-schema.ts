/**
 * A GraphQL API's schema as documentation: the answer of an introspection query (what the endpoint
 * answers, or an uploaded `{"data": {"__schema": …}}` file) or schema language (a `.graphql` file), shaped
 * into the kept document: the root fields of Query, Mutation and Subscription as operations (arguments,
 * result type, descriptions), and every other type with its fields, input fields, enum values or members.
 * Built-in scalars and introspection types are left out; counts and description lengths are bounded. The
 * introspection answer is checked with zod; graphql-js (its utilities: the query text, schema language)
 * loads only here, with the first GraphQL documentation a process processes.
 */
import { z } from 'zod';
import type { GraphqlField, GraphqlSchemaDocument, GraphqlType } from './summary.ts';

/** Types kept at most (a schema with more keeps the first, in the answer's order). */
export const MAX_GRAPHQL_TYPES = 2000;
/** Fields (or values) kept per type. */
const MAX_FIELDS = 500;
const MAX_DESCRIPTION_CHARS = 2000;
const BUILT_IN_SCALARS = new Set(['String', 'Int', 'Float', 'Boolean', 'ID']);

type Utilities = typeof import('graphql/utilities');
let utilities: Promise<Utilities> | undefined;
const loadUtilities = (): Promise<Utilities> => {
  utilities ??= import('graphql/utilities');
  return utilities;
};

/** The introspection query sent to an endpoint (graphql-js's, with descriptions). */
export async function introspectionQuery(): Promise<string> {
  return (await loadUtilities()).getIntrospectionQuery({ descriptions: true });
}

interface TypeRefShape {
  kind: string;
  name?: string | null | undefined;
  ofType?: TypeRefShape | null | undefined;
}
const TypeRef: z.ZodType<TypeRefShape> = z.lazy(() =>
  z.object({ kind: z.string(), name: z.string().nullish(), ofType: TypeRef.nullish() }),
);
const InputValue = z.object({
  name: z.string(),
  description: z.string().nullish(),
  type: TypeRef,
  defaultValue: z.string().nullish(),
});
const Field = z.object({
  name: z.string(),
  description: z.string().nullish(),
  args: z.array(InputValue).nullish(),
  type: TypeRef,
  isDeprecated: z.boolean().nullish(),
  deprecationReason: z.string().nullish(),
});
const FullType = z.object({
  kind: z.string(),
  name: z.string(),
  description: z.string().nullish(),
  fields: z.array(Field).nullish(),
  inputFields: z.array(InputValue).nullish(),
  enumValues: z.array(z.object({ name: z.string(), description: z.string().nullish() })).nullish(),
  possibleTypes: z.array(z.object({ name: z.string() })).nullish(),
});
const Named = z.object({ name: z.string() }).nullish();
const Schema = z.object({
  queryType: Named,
  mutationType: Named,
  subscriptionType: Named,
  types: z.array(FullType),
});
/** `{data: {__schema}}` (an endpoint's answer, a saved file) or `{__schema}` (graphql-js's IntrospectionQuery). */
const IntrospectionAnswer = z.union([
  z.object({ data: z.object({ __schema: Schema }) }).transform((answer) => answer.data.__schema),
  z.object({ __schema: Schema }).transform((answer) => answer.__schema),
]);

/** Whether parsed JSON is an introspection answer (an uploaded or fetched file, detected by content). */
export function isIntrospectionAnswer(value: unknown): boolean {
  return IntrospectionAnswer.safeParse(value).success;
}

function typeText(ref: TypeRefShape): string {
  if (ref.kind === 'NON_NULL' && ref.ofType) return `${typeText(ref.ofType)}!`;
  if (ref.kind === 'LIST' && ref.ofType) return `[${typeText(ref.ofType)}]`;
  return ref.name ?? '?';
}

function described(description: string | null | undefined): { description?: string } {
  const text = description?.trim();
  if (!text) return {};
  return {
    description: text.length > MAX_DESCRIPTION_CHARS ? `${text.slice(0, MAX_DESCRIPTION_CHARS)}…` : text,
  };
}

function fieldOf(field: z.infer<typeof Field>): GraphqlField {
  return {
    name: field.name,
    type: typeText(field.type),
    ...described(field.description),
    args: (field.args ?? []).map((arg) => ({
      name: arg.name,
      type: typeText(arg.type),
      ...described(arg.description),
      ...(arg.defaultValue != null ? { defaultValue: arg.defaultValue } : {}),
    })),
    ...(field.isDeprecated ? { deprecated: field.deprecationReason ?? 'deprecated' } : {}),
  };
}

const KINDS: Record<string, GraphqlType['kind'] | undefined> = {
  OBJECT: 'type',
  INTERFACE: 'interface',
  INPUT_OBJECT: 'input',
  ENUM: 'enum',
  UNION: 'union',
  SCALAR: 'scalar',
};

/** An introspection answer (see IntrospectionAnswer) → the kept document. Throws on another shape. */
export function shapeIntrospection(
  answer: unknown,
  source: string,
  endpoint?: string,
): GraphqlSchemaDocument {
  const parsed = IntrospectionAnswer.safeParse(answer);
  if (!parsed.success) {
    throw new Error('the answer is not a GraphQL introspection result (no data.__schema with types)');
  }
  const schema = parsed.data;
  const roots = {
    query: schema.queryType?.name,
    mutation: schema.mutationType?.name,
    subscription: schema.subscriptionType?.name,
  };
  const rootNames = new Set(Object.values(roots).filter((name): name is string => Boolean(name)));
  const document: GraphqlSchemaDocument = {
    kind: 'graphql-schema',
    source,
    ...(endpoint ? { endpoint } : {}),
    ...(roots.query ? { queryType: roots.query } : {}),
    ...(roots.mutation ? { mutationType: roots.mutation } : {}),
    ...(roots.subscription ? { subscriptionType: roots.subscription } : {}),
    operations: [],
    types: [],
  };
  for (const [operation, name] of Object.entries(roots) as Array<[keyof typeof roots, string | undefined]>) {
    const root = name ? schema.types.find((type) => type.name === name) : undefined;
    for (const field of (root?.fields ?? []).slice(0, MAX_FIELDS)) {
      document.operations.push({ operation, ...fieldOf(field) });
    }
  }
  for (const type of schema.types) {
    if (document.types.length >= MAX_GRAPHQL_TYPES) break;
    const kind = KINDS[type.kind];
    if (!kind || rootNames.has(type.name) || type.name.startsWith('__')) continue;
    if (kind === 'scalar' && BUILT_IN_SCALARS.has(type.name)) continue;
    const fields =
      kind === 'input'
        ? (type.inputFields ?? []).map((field) => fieldOf({ ...field, args: [] }))
        : (type.fields ?? []).map(fieldOf);
    document.types.push({
      kind,
      name: type.name,
      ...described(type.description),
      fields: fields.slice(0, MAX_FIELDS),
      ...(type.enumValues?.length ? { values: type.enumValues.slice(0, MAX_FIELDS).map((v) => v.name) } : {}),
      ...(type.possibleTypes?.length ? { possibleTypes: type.possibleTypes.map((t) => t.name) } : {}),
    });
  }
  return document;
}

/** Schema language (a `.graphql` file) → the kept document, through graphql-js's own introspection of it. */
export async function shapeSdl(text: string, source: string): Promise<GraphqlSchemaDocument> {
  const { buildSchema, introspectionFromSchema } = await loadUtilities();
  let schema: ReturnType<typeof buildSchema>;
  try {
    schema = buildSchema(text);
  } catch (error) {
    throw new Error(`the GraphQL schema language does not parse: ${(error as Error).message}`);
  }
  return shapeIntrospection({ __schema: introspectionFromSchema(schema).__schema }, source);
}

/**
 * Whether a documentation URL is a GraphQL endpoint to introspect: its path ends in `/graphql`, or it
 * carries the hint `#graphql` (an endpoint elsewhere: `https://api.example.com/query#graphql`).
 */
export function isGraphqlEndpoint(url: string | undefined): boolean {
  if (url === undefined) return false;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return false;
    return parsed.hash.toLowerCase() === '#graphql' || /\/graphql\/?$/i.test(parsed.pathname);
  } catch {
    return false;
  }
}
