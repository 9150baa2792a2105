import { z } from 'zod';
import type { ResourceDefinition } from './kinds.ts';
import { PART_OF_LABEL } from './labels.ts';
import { GROUP, VERSION } from './meta.ts';

/** A JSON Schema node as zod emits it and as the CRD schema carries it. */
export type SchemaNode = { [key: string]: unknown };

const PRESERVE = 'x-kubernetes-preserve-unknown-fields';

function isNode(value: unknown): value is SchemaNode {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function resolveRef(node: SchemaNode, defs: Record<string, SchemaNode>): SchemaNode {
  const ref = node.$ref;
  if (typeof ref !== 'string') return node;
  const name = ref.replace('#/$defs/', '');
  const target = defs[name];
  if (!target) throw new Error(`unresolved $ref ${ref}`);
  const { $ref: _ref, ...rest } = node;
  // Keywords beside a $ref (e.g. a description or a preserve marker) win over the referenced schema's.
  return { ...resolveRef(target, defs), ...rest };
}

function branchesOf(node: SchemaNode): SchemaNode[] | undefined {
  const branches = node.anyOf ?? node.oneOf;
  return Array.isArray(branches) ? branches.filter(isNode) : undefined;
}

function withoutUnionKeys(node: SchemaNode): SchemaNode {
  const { anyOf: _a, oneOf: _o, ...rest } = node;
  return rest;
}

/**
 * Turns zod's JSON Schema (draft 2020-12) into a Kubernetes structural schema: every node typed,
 * no $ref, unions folded (int-or-string, nullable, discriminated objects), and
 * x-kubernetes-preserve-unknown-fields only where a zod schema is marked with it. No CEL rules
 * (x-kubernetes-validations): servers before 1.25 do not know them and current kubectl refuses them
 * there, so what JSON Schema cannot say is the operator's check (tools/validation.ts checkTool).
 */
export function toStructural(input: SchemaNode, defs: Record<string, SchemaNode>, path = '$'): SchemaNode {
  const node = resolveRef(input, defs);
  const description = typeof node.description === 'string' ? { description: node.description } : {};

  if (node[PRESERVE] === true) {
    return node.type === 'object'
      ? { type: 'object', ...description, [PRESERVE]: true }
      : { ...description, [PRESERVE]: true };
  }

  const branches = branchesOf(node);
  if (branches)
    return foldUnion(
      withoutUnionKeys(node),
      branches.map((b) => resolveRef(b, defs)),
      defs,
      path,
    );

  const out: SchemaNode = {};
  for (const [key, value] of Object.entries(node)) {
    switch (key) {
      case '$schema':
      case '$defs':
      case 'propertyNames':
      case 'id':
        break;
      case 'additionalProperties':
        // Kubernetes prunes unknown fields itself; `false` is not allowed beside `properties`.
        if (isNode(value)) out.additionalProperties = toStructural(value, defs, `${path}.*`);
        break;
      case 'properties': {
        const props: Record<string, SchemaNode> = {};
        for (const [name, child] of Object.entries(value as Record<string, SchemaNode>)) {
          props[name] = toStructural(child, defs, `${path}.${name}`);
        }
        out.properties = props;
        break;
      }
      case 'items':
        out.items = toStructural(value as SchemaNode, defs, `${path}[]`);
        break;
      case 'const':
        out.enum = [value];
        break;
      case 'exclusiveMinimum':
        // OpenAPI v3.0 (what CRDs speak) has boolean exclusive bounds.
        out.minimum = value;
        out.exclusiveMinimum = true;
        break;
      case 'exclusiveMaximum':
        out.maximum = value;
        out.exclusiveMaximum = true;
        break;
      case 'pattern':
        // zod's format patterns (date-time, uri) use look-arounds that the API server's RE2 rejects.
        if (node.format === undefined) out.pattern = value;
        break;
      default:
        out[key] = value;
    }
  }
  if (out.type === undefined)
    throw new Error(`untyped schema at ${path}; mark it preserve-unknown if deliberate`);
  // Safe-integer bounds zod adds to every int are noise in a CRD.
  if (out.minimum === Number.MIN_SAFE_INTEGER) delete out.minimum;
  if (out.maximum === Number.MAX_SAFE_INTEGER) delete out.maximum;
  return out;
}

function foldUnion(
  base: SchemaNode,
  branches: SchemaNode[],
  defs: Record<string, SchemaNode>,
  path: string,
): SchemaNode {
  const nonNull = branches.filter((b) => b.type !== 'null');
  const extra = base.description ? { description: base.description } : {};
  if (nonNull.length < branches.length) {
    const rest = nonNull.length === 1 ? (nonNull[0] as SchemaNode) : { ...base, anyOf: nonNull };
    return { ...toStructural(rest, defs, path), ...extra, nullable: true };
  }
  const types = new Set(nonNull.map((b) => b.type));
  if (types.size === 2 && types.has('string') && types.has('integer')) {
    return { ...extra, 'x-kubernetes-int-or-string': true };
  }
  if (nonNull.every((b) => b.type === 'object' && isNode(b.properties))) {
    return foldObjectUnion(nonNull, defs, path, extra);
  }
  throw new Error(`cannot express the union at ${path} as a structural schema`);
}

/**
 * A discriminated union of objects becomes one object with all properties; fields only some branches
 * require (a request's url, a transform's code) are left to the operator's check.
 */
function foldObjectUnion(
  branches: SchemaNode[],
  defs: Record<string, SchemaNode>,
  path: string,
  extra: SchemaNode,
): SchemaNode {
  const resolved = branches.map(
    (branch): SchemaNode => ({
      ...branch,
      properties: Object.fromEntries(
        Object.entries(branch.properties as Record<string, SchemaNode>).map(([k, v]) => [
          k,
          resolveRef(v, defs),
        ]),
      ),
    }),
  );
  const discriminator = findDiscriminator(resolved);
  const properties: Record<string, SchemaNode> = {};
  const requiredSets = resolved.map(
    (b) => new Set(Array.isArray(b.required) ? (b.required as string[]) : []),
  );
  for (const branch of resolved) {
    for (const [name, child] of Object.entries(branch.properties as Record<string, SchemaNode>)) {
      const converted = toStructural(child, defs, `${path}.${name}`);
      const existing = properties[name];
      if (existing && name === discriminator) {
        existing.enum = [...(existing.enum as unknown[]), ...(converted.enum as unknown[])];
        if (converted.default !== undefined) existing.default = converted.default;
      } else if (!existing) {
        properties[name] = converted;
      }
    }
  }
  // A default of one branch's field would be applied by the API server to every branch's objects
  // (a transform step would get `method: GET`), so only fields all branches share keep theirs.
  for (const [name, property] of Object.entries(properties)) {
    const everywhere = resolved.every((b) => name in (b.properties as Record<string, SchemaNode>));
    if (!everywhere && name !== discriminator) delete property.default;
  }
  const requiredEverywhere = [...(requiredSets[0] ?? [])].filter((name) =>
    requiredSets.every((s) => s.has(name)),
  );
  return {
    type: 'object',
    ...extra,
    properties,
    ...(requiredEverywhere.length ? { required: requiredEverywhere } : {}),
  };
}

function resolveDiscriminatorValue(branch: SchemaNode, key: string): unknown {
  const prop = (branch.properties as Record<string, SchemaNode>)[key];
  return prop?.const ?? (Array.isArray(prop?.enum) ? prop.enum[0] : undefined);
}

function findDiscriminator(branches: SchemaNode[]): string | undefined {
  const first = branches[0]?.properties as Record<string, SchemaNode> | undefined;
  if (!first) return undefined;
  return Object.keys(first).find((key) =>
    branches.every((b) => resolveDiscriminatorValue(b, key) !== undefined),
  );
}

/** The structural schema of one zod schema. */
export function structuralSchemaOf(schema: z.ZodType): SchemaNode {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'throw' }) as SchemaNode;
  const defs = (json.$defs ?? {}) as Record<string, SchemaNode>;
  return toStructural(json, defs);
}

// What the API server says of these fields in its own types, so `kubectl explain` reads the same here.
const API_VERSION_DESCRIPTION =
  'APIVersion defines the versioned schema of this representation of an object: kubeglue.dev/v1alpha1.';
const KIND_DESCRIPTION = 'Kind is a string value representing the REST resource this object represents.';

/** The CustomResourceDefinition object of one kind. */
export function customResourceDefinition(def: ResourceDefinition): SchemaNode {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${def.plural}.${GROUP}`, labels: { [PART_OF_LABEL]: 'kubeglue' } },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        categories: ['kubeglue'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.printerColumns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: def.description,
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string', description: API_VERSION_DESCRIPTION },
                kind: { type: 'string', description: KIND_DESCRIPTION },
                // The API server refuses anything but a type here (metadata is its own to describe).
                metadata: { type: 'object' },
                spec: { ...structuralSchemaOf(def.spec), description: def.specDescription },
                status: { ...structuralSchemaOf(def.status), description: def.statusDescription },
              },
            },
          },
        },
      ],
    },
  };
}
