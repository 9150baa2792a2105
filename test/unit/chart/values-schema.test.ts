import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CHART_DIR, EVERYTHING_VALUES, type HelmError, helm } from '../../support/helm.ts';

type Node = Record<string, unknown>;

const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as Node;
const defaults = parse(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as Node;
const everything = parse(readFileSync(EVERYTHING_VALUES, 'utf8')) as Node;
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

/** Helm merges user values over the defaults (objects deeply, anything else replaced). */
function merged(base: Node, override: Node): Node {
  const out: Node = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = out[key];
    out[key] =
      value && typeof value === 'object' && !Array.isArray(value) && current && typeof current === 'object'
        ? merged(current as Node, value as Node)
        : value;
  }
  return out;
}

function errorsFor(values: Node): string[] {
  return validate(values) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

/** Every object schema of our own shape: typed properties and no others. */
function openObjects(node: Node, path: string, out: string[]): void {
  if (node.type === 'object' && node.properties) {
    if (node.additionalProperties !== false) out.push(path || '(root)');
    for (const [key, child] of Object.entries(node.properties as Record<string, Node>)) {
      openObjects(child, path ? `${path}.${key}` : key, out);
    }
  }
  if (node.items && typeof node.items === 'object') openObjects(node.items as Node, `${path}[]`, out);
}

describe('values.schema.json', () => {
  it('accepts the defaults and the everything-on values', () => {
    expect(errorsFor(defaults)).toEqual([]);
    expect(errorsFor(merged(defaults, everything))).toEqual([]);
  });

  it('refuses unknown keys everywhere (additionalProperties: false on every object of ours)', () => {
    const open: string[] = [];
    openObjects(schema, '', open);
    expect(open).toEqual([]);
    for (const [override, where] of [
      [{ bogus: 1 }, ''],
      [{ image: { tags: 'x' } }, '/image'],
      [{ api: { replica: 3 } }, '/api'],
      [{ api: { service: { nodePort: 30000 } } }, '/api/service'],
      [
        { operator: { resources: { requests: { cpu: '1', memory: '1Gi', gpu: '1' } } } },
        '/operator/resources/requests',
      ],
      [{ networkPolicy: { runnerEgress: { internt: true } } }, '/networkPolicy/runnerEgress'],
      [{ keys: { masterKey: 'inline-is-not-a-thing' } }, '/keys'],
      [{ extraEnv: [{ name: 'A', vaule: 'typo' }] }, '/extraEnv/0'],
    ] as [Node, string][]) {
      expect(errorsFor(merged(defaults, override)), JSON.stringify(override)).toContain(
        `${where} must NOT have additional properties`,
      );
    }
  });

  it('refuses wrong types and values', () => {
    for (const override of [
      { api: { replicas: 'two' } },
      { api: { port: 70000 } },
      { image: { userId: 0 } },
      { image: { pullPolicy: 'Sometimes' } },
      { egress: { private: 'maybe' } },
      { egress: { allow: '10.0.0.0/8' } },
      { egress: { allow: ['10.0.0.0/8,10.1.0.0/16'] } },
      { operator: { deleteSucceededPods: 'yes' } },
      { operator: { toolRunRetentionMs: -1 } },
      { runner: { tmpSize: 'lots' } },
      { networkPolicy: { enabled: 'true' } },
      { imagePullSecrets: [{ name: 'x' }] },
      { logLevel: 'verbose' },
      { publicUrl: 'kubeglue.example.com' },
    ] as Node[]) {
      expect(errorsFor(merged(defaults, override)), JSON.stringify(override)).not.toEqual([]);
    }
  });

  it('is enforced by helm itself', async () => {
    const lint = (...args: string[]) =>
      helm(['lint', CHART_DIR, ...args]).then(
        () => '',
        (error: HelmError) => error.stdout + error.stderr,
      );
    expect(await lint('--set', 'api.replicas=two')).toMatch(/api\.replicas: Invalid type/);
    expect(await lint('--set', 'api.bogus=1')).toMatch(/Additional property bogus is not allowed/);
    expect(await lint('--set', 'operator.maxAsyncRuns=8')).toBe('');
  });
});
