import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { writeConfigurationFiles } from '../../../config/generate.ts';
import { CHART_CRD_DIR, CRD_DIR, writeGeneratedFiles } from '../../../contract/generate.ts';
import { startDiscoveryServer } from '../../support/kube-discovery.ts';
import { onPath, skipReason } from '../../support/prerequisites.ts';

const root = join(import.meta.dirname, '..', '..', '..');
const run = promisify(execFile);
// kubectl's own check of the CRDs (test/support/prerequisites.ts: skipped without it, an error under CI).
const kubectl = skipReason('kubectl') === undefined ? onPath('kubectl') : undefined;

type Node = { [key: string]: unknown };

function crdSchema(crd: Node): Node {
  const versions = (crd.spec as Node).versions as Node[];
  return ((versions[0] as Node).schema as Node).openAPIV3Schema as Node;
}

/** Paths (spec-relative) where an untyped, preserved subtree is deliberate. */
const DELIBERATELY_FREE_FORM = [
  /\.spec(\.tool)?\.(inputSchema|outputSchema)$/,
  /\.spec(\.tool)?\.steps\[\]\.config\.body$/,
  // A GraphQL step's variables: any JSON object, as a body.
  /\.spec(\.tool)?\.steps\[\]\.config\.graphql\.variables$/,
  /\.spec(\.tool)?\.steps\[\]\.config\.queryParams\.\*$/,
  // A tool test's inputs, its recorded exchanges (a query is a list of [name, value] pairs, which a structural
  // schema cannot type; the API checks them) and its expected output or output schema: any JSON.
  /\.spec(\.tool)?\.tests\[\]\.(inputs|recording|expect\.output|expect\.outputSchema)$/,
  // A ToolSchedule's inputs: any JSON object, as a run request's.
  /^\.spec\.inputs$/,
];

function structuralViolations(node: Node, path: string, out: string[]): void {
  for (const keyword of ['$ref', 'anyOf', 'oneOf', 'allOf', 'not', '$defs']) {
    if (keyword in node) out.push(`${path}: has ${keyword}`);
  }
  if (node['x-kubernetes-preserve-unknown-fields'] === true) {
    if (!DELIBERATELY_FREE_FORM.some((re) => re.test(path)))
      out.push(`${path}: unexpected preserve-unknown-fields`);
    return;
  }
  if (node['x-kubernetes-int-or-string'] === true) return;
  if (typeof node.type !== 'string') out.push(`${path}: no type`);
  if (node.properties && node.additionalProperties)
    out.push(`${path}: properties beside additionalProperties`);
  for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, Node>)) {
    structuralViolations(child, `${path}.${name}`, out);
  }
  if (node.items) structuralViolations(node.items as Node, `${path}[]`, out);
  if (node.additionalProperties && typeof node.additionalProperties === 'object') {
    structuralViolations(node.additionalProperties as Node, `${path}.*`, out);
  }
}

describe('generated CRDs and OpenAPI document', () => {
  let outDir: string;
  let generated: string[];

  beforeAll(async () => {
    outDir = await mkdtemp(join(tmpdir(), 'kubeglue-generate-'));
    // The settings registry's pages come second: the chart README carries a table of each.
    generated = [
      ...new Set([...(await writeGeneratedFiles(outDir)), ...(await writeConfigurationFiles(outDir))]),
    ];
  });
  afterAll(async () => {
    await rm(outDir, { recursive: true, force: true });
  });

  it('match the committed files (run `npm run generate` after changing contract/ or config/)', async () => {
    expect(generated.length).toBeGreaterThan(0);
    for (const path of generated) {
      const committed = await readFile(join(root, path), 'utf8').catch(() => '<missing>');
      expect(committed, `${path} is stale`).toBe(await readFile(join(outDir, path), 'utf8'));
    }
  });

  it('put the CRDs at crds/ for kubectl apply, and the same bytes in the chart (one source: contract/)', async () => {
    const files = (await readdir(join(root, CRD_DIR))).sort();
    expect(files.length).toBeGreaterThan(0);
    expect((await readdir(join(root, CHART_CRD_DIR))).sort()).toEqual(files);
    for (const file of files) {
      expect(await readFile(join(root, CHART_CRD_DIR, file), 'utf8'), file).toBe(
        await readFile(join(root, CRD_DIR, file), 'utf8'),
      );
    }
  });

  it('emit one structural CRD per kind with status subresource, columns, short names and category', async () => {
    const files = (await readdir(join(outDir, CRD_DIR))).filter((f) => f.endsWith('.yaml')).sort();
    expect(files).toEqual([
      'kubeglue.dev_systems.yaml',
      'kubeglue.dev_toolruns.yaml',
      'kubeglue.dev_tools.yaml',
      'kubeglue.dev_toolschedules.yaml',
    ]);
    for (const file of files) {
      const crd = parse(await readFile(join(outDir, CRD_DIR, file), 'utf8')) as Node;
      const spec = crd.spec as Node;
      const version = (spec.versions as Node[])[0] as Node;
      expect(spec.group).toBe('kubeglue.dev');
      expect(version.name).toBe('v1alpha1');
      expect(version.subresources).toEqual({ status: {} });
      expect((version.additionalPrinterColumns as Node[]).length).toBeGreaterThan(1);
      expect((spec.names as Node).categories).toEqual(['kubeglue']);
      expect(((spec.names as Node).shortNames as string[]).length).toBeGreaterThan(0);
      const violations: string[] = [];
      structuralViolations(crdSchema(crd), '', violations);
      expect(violations, file).toEqual([]);
    }
  });

  it('carry no CEL rules (x-kubernetes-validations), which servers before 1.25 and current kubectl refuse there', async () => {
    for (const file of await readdir(join(outDir, CRD_DIR))) {
      const text = await readFile(join(outDir, CRD_DIR, file), 'utf8');
      expect(text, file).not.toContain('x-kubernetes-validations');
    }
    // What the rules said is the operator's check now (tools/validation.ts); the shape stays in the schema.
    const tools = await readFile(join(outDir, CRD_DIR, 'kubeglue.dev_tools.yaml'), 'utf8');
    const schema = crdSchema(parse(tools) as Node);
    const steps = ((schema.properties as Node).spec as Node).properties as Node;
    const stepsNode = steps.steps as Node;
    expect(stepsNode.minItems).toBe(1);
    expect((steps.version as Node).pattern).toBe('^\\d+\\.\\d+\\.\\d+$');
  });

  it('describe every /v1 route in the OpenAPI document with resolvable references', async () => {
    const doc = JSON.parse(await readFile(join(outDir, 'docs', 'openapi.json'), 'utf8')) as Node;
    expect(doc.openapi).toBe('3.1.0');
    const paths = doc.paths as Record<string, Node>;
    expect(Object.keys(paths)).toEqual(
      expect.arrayContaining([
        '/runs',
        '/runs/{runId}/cancel',
        '/tools/{toolId}/run',
        '/hooks/{toolId}',
        '/systems',
      ]),
    );
    const schemas = (doc.components as Node).schemas as Node;
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const ref of refs) {
      const name = ref.replace(/^"\$ref":"#\/components\/schemas\//, '').replace(/"$/, '');
      expect(schemas, ref).toHaveProperty([name]);
    }
  });

  it.skipIf(!kubectl)('are accepted by kubectl create --dry-run=client', async () => {
    const discovery = await startDiscoveryServer();
    try {
      const { stdout } = await run(kubectl as string, [
        '--kubeconfig=/dev/null',
        '--server',
        discovery.url,
        'create',
        '--dry-run=client',
        '--validate=false',
        '-o',
        'name',
        '-f',
        join(outDir, CRD_DIR),
      ]);
      expect(stdout.trim().split('\n').sort()).toEqual([
        'customresourcedefinition.apiextensions.k8s.io/systems.kubeglue.dev',
        'customresourcedefinition.apiextensions.k8s.io/toolruns.kubeglue.dev',
        'customresourcedefinition.apiextensions.k8s.io/tools.kubeglue.dev',
        'customresourcedefinition.apiextensions.k8s.io/toolschedules.kubeglue.dev',
      ]);
    } finally {
      await discovery.stop();
    }
  });
});
