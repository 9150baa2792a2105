import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CRD_DIR } from '../../../contract/generate.ts';

interface SchemaNode {
  description?: string;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  additionalProperties?: SchemaNode | boolean;
}

/** Every property below `node` that has no description, as a dotted path. */
function undocumented(node: SchemaNode, path: string): string[] {
  const missing: string[] = [];
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    const childPath = `${path}.${name}`;
    if (!child.description) missing.push(childPath);
    missing.push(...undocumented(child, childPath));
  }
  if (node.items) missing.push(...undocumented(node.items, `${path}[]`));
  if (node.additionalProperties && typeof node.additionalProperties === 'object') {
    missing.push(...undocumented(node.additionalProperties, `${path}{}`));
  }
  return missing;
}

const rootOf = (plural: string) =>
  parse(
    readFileSync(join(import.meta.dirname, '..', '..', '..', CRD_DIR, `kubeglue.dev_${plural}.yaml`), 'utf8'),
  ).spec.versions[0].schema.openAPIV3Schema as SchemaNode;

describe('CRD schemas', () => {
  for (const plural of ['tools', 'systems', 'toolruns', 'toolschedules']) {
    it(`document every field of ${plural}, so kubectl explain describes it`, () => {
      const { spec, status } = rootOf(plural).properties ?? {};
      expect([...undocumented(spec ?? {}, 'spec'), ...undocumented(status ?? {}, 'status')]).toEqual([]);
    });

    it(`document the object, its spec and its status of ${plural} themselves (kubectl explain ${plural}.spec)`, () => {
      const root = rootOf(plural);
      expect(root.description).toBeTruthy();
      const described = Object.fromEntries(
        Object.entries(root.properties ?? {}).map(([name, node]) => [
          name,
          (node.description ?? '').length > 20,
        ]),
      );
      // metadata may carry nothing but its type: the API server describes it itself.
      expect(described).toEqual({ apiVersion: true, kind: true, metadata: false, spec: true, status: true });
    });
  }
});
