/**
 * What a client browsing and editing tools needs from /v1 (the dashboard's Tools pages use exactly this):
 * the list's search, archived-only filter and folders; a tool as a manifest for GitOps, in JSON or YAML;
 * and refusals that say at which field (and, for code, at which line) each problem is.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import { toolFromResource } from '../../../contract/resources/convert.ts';
import { ToolManifest, ToolResource } from '../../../contract/resources/kinds.ts';
import { useTestApi } from '../../support/embedded.ts';

interface ToolList {
  data: { id: string }[];
  total: number;
  folders: { path: string; tools: number }[];
}
const api = useTestApi();

const transform = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  steps: [{ id: 'only', config: { type: 'transform', transformCode: '() => 1' } }],
  ...extra,
});

async function listed(query: string, key?: string): Promise<ToolList> {
  const answer = await api.call<ToolList>('GET', `/v1/tools${query}`, key ? { key } : {});
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}
const ids = (list: ToolList) => list.data.map((tool) => tool.id);

beforeAll(async () => {
  const tools = [
    transform('invoice-sync', {
      name: 'Invoice sync',
      folder: 'billing/invoices',
      instruction: 'Copies invoices to the ledger',
    }),
    transform('refund-report', { name: 'Refunds', folder: 'billing/reports' }),
    transform('crm-contacts', { folder: 'crm', instruction: 'Lists contacts from the CRM' }),
    transform('scratch'),
    transform('old-invoices', { folder: 'billing/invoices', archived: true }),
  ];
  for (const tool of tools) {
    const created = await api.call('POST', '/v1/tools', { body: tool });
    expect(created.status, created.text).toBe(201);
  }
});

describe('listing tools', () => {
  it('finds tools by every word of a search, in the id, name, instruction or folder, in any case', async () => {
    expect(ids(await listed('?search=INVOICE'))).toEqual(['invoice-sync']);
    expect(ids(await listed('?search=ledger%20copies'))).toEqual(['invoice-sync']);
    expect(ids(await listed('?search=billing'))).toEqual(['invoice-sync', 'refund-report']);
    expect(ids(await listed('?search=contacts%20ledger'))).toEqual([]);
    expect((await listed('?search=billing&folder=billing/reports')).total).toBe(1);
  });

  it('lists the archived tools alone with includeArchived=only', async () => {
    expect(ids(await listed('?includeArchived=only'))).toEqual(['old-invoices']);
    expect(ids(await listed(''))).not.toContain('old-invoices');
    expect(ids(await listed('?includeArchived=true'))).toContain('old-invoices');
    const bad = await api.call<ErrorBody>('GET', '/v1/tools?includeArchived=maybe');
    expect(bad.status).toBe(400);
    expect(bad.body.error.issues?.[0]?.path).toEqual(['includeArchived']);
  });

  it('names every folder with its parents and counts, whatever the folder and search filters', async () => {
    const folders = [
      { path: 'billing', tools: 2 },
      { path: 'billing/invoices', tools: 1 },
      { path: 'billing/reports', tools: 1 },
      { path: 'crm', tools: 1 },
    ];
    expect((await listed('')).folders).toEqual(folders);
    expect((await listed('?folder=crm&search=nothing-matches')).folders).toEqual(folders);
    // The archived filter applies: archived tools count only where they are listed.
    expect((await listed('?includeArchived=only')).folders).toEqual([
      { path: 'billing', tools: 1 },
      { path: 'billing/invoices', tools: 1 },
    ]);
  });

  it('shows a key limited to tools only their folders', async () => {
    const limited = await api.call<{ key: string }>('POST', '/v1/api-keys', {
      body: { name: 'crm only', scopes: ['tools:read'], toolIds: ['crm-contacts'] },
    });
    const list = await listed('', limited.body.key);
    expect(ids(list)).toEqual(['crm-contacts']);
    expect(list.folders).toEqual([{ path: 'crm', tools: 1 }]);
  });
});

describe('a tool as a manifest for GitOps', () => {
  it('answers the Tool resource kubectl applies: apiVersion, kind, name, namespace and spec, nothing else', async () => {
    const answer = await api.call<unknown>('GET', '/v1/tools/invoice-sync/manifest');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    const manifest = ToolManifest.parse(answer.body);
    expect(Object.keys(answer.body as object).sort()).toEqual(['apiVersion', 'kind', 'metadata', 'spec']);
    expect(manifest.metadata).toEqual({ name: 'invoice-sync', namespace: expect.any(String) });
    const tool = (await api.call<Record<string, unknown>>('GET', '/v1/tools/invoice-sync')).body;
    const { createdAt: _c, updatedAt: _u, ...definition } = tool;
    expect(toolFromResource(ToolResource.parse(answer.body))).toEqual(definition);
  });

  it('answers YAML for Accept: application/yaml, code kept as written', async () => {
    const code = '(sourceData) => {\n  const rows = sourceData.only.data;\n  return { rows };\n}';
    const created = await api.call('POST', '/v1/tools', {
      body: {
        id: 'My Report',
        steps: [{ id: 'only', config: { type: 'transform', transformCode: '() => [1, 2]' } }],
        outputTransform: code,
      },
    });
    expect(created.status, created.text).toBe(201);
    const answer = await api.call<string>('GET', `/v1/tools/${encodeURIComponent('My Report')}/manifest`, {
      headers: { accept: 'application/yaml' },
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/yaml/);
    // The code is a block, line by line, not one long quoted string.
    expect(answer.text).toContain('  const rows = sourceData.only.data;\n');
    const manifest = ToolManifest.parse(parse(answer.text));
    // An id that is not a resource name travels in spec.id.
    expect(manifest.spec.id).toBe('My Report');
    expect(manifest.metadata.name).toMatch(/^my-report-[0-9a-f]{10}$/);
    expect(manifest.spec.outputTransform).toBe(code);

    const json = await api.call('GET', `/v1/tools/${encodeURIComponent('My Report')}/manifest`, {
      headers: { accept: 'application/json, application/yaml;q=0.5' },
    });
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    const anything = await api.call('GET', '/v1/tools/scratch/manifest', { headers: { accept: '*/*' } });
    expect(anything.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('is not found for a missing tool or one the key may not use', async () => {
    expect((await api.call('GET', '/v1/tools/nope/manifest')).status).toBe(404);
    const limited = await api.call<{ key: string }>('POST', '/v1/api-keys', {
      body: { name: 'scratch only', scopes: ['tools:read'], toolIds: ['scratch'] },
    });
    const refused = await api.call<ErrorBody>('GET', '/v1/tools/invoice-sync/manifest', {
      key: limited.body.key,
    });
    expect(refused.status).toBe(404);
    expect(refused.body.error.code).toBe('KG_ERR_TOOL_NOT_FOUND');
  });
});

describe('editing a tool', () => {
  it('removes an optional field given as null, and keeps the others', async () => {
    const created = await api.call('POST', '/v1/tools', {
      body: transform('tidy', {
        name: 'Tidy',
        folder: 'x/y',
        inputSchema: { type: 'object', properties: { n: { type: 'number' } } },
        outputTransform: '(s) => s.only',
      }),
    });
    expect(created.status, created.text).toBe(201);
    const updated = await api.call<Record<string, unknown>>('PUT', '/v1/tools/tidy', {
      body: { folder: null, inputSchema: null, outputTransform: null, instruction: 'Tidies' },
    });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({ id: 'tidy', name: 'Tidy', instruction: 'Tidies' });
    expect(Object.keys(updated.body)).not.toEqual(
      expect.arrayContaining(['folder', 'inputSchema', 'outputTransform']),
    );
    const read = (await api.call<Record<string, unknown>>('GET', '/v1/tools/tidy')).body;
    expect(['folder', 'inputSchema', 'outputTransform'].filter((field) => field in read)).toEqual([]);
    // Steps cannot be removed: a tool needs them.
    expect((await api.call('PUT', '/v1/tools/tidy', { body: { steps: null } })).status).toBe(400);
  });
});

describe('refusals at their fields', () => {
  it("places a 422's code problems at their field, with the line and column inside the code", async () => {
    const refused = await api.call<ErrorBody>('POST', '/v1/tools', {
      body: {
        id: 'broken',
        steps: [
          { id: 'fine', config: { type: 'transform', transformCode: '() => 1' } },
          { id: 'shape', config: { type: 'transform', transformCode: '(s) => {\n  return s.fine +;\n}' } },
        ],
        // Compiles, but is no function: a problem without a line.
        outputTransform: '42',
      },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('KG_ERR_TOOL_INVALID');
    // The message still names the step by its id for people.
    expect(refused.body.error.message).toContain(
      'steps[1] (shape).config.transformCode: SyntaxError at line 2',
    );
    expect(refused.body.error.issues).toEqual([
      {
        path: ['steps', 1, 'config', 'transformCode'],
        message: expect.stringContaining('SyntaxError at line 2'),
        line: 2,
        column: expect.any(Number),
      },
      { path: ['outputTransform'], message: expect.any(String) },
    ]);
  });

  it('answers duplicate and reserved step ids with the 422 of every other tool problem, as checkTool words it for kubectl too', async () => {
    const step = (id: string) => ({ id, config: { type: 'transform', transformCode: '() => 1' } });
    const saved = await api.call<ErrorBody>('POST', '/v1/tools', {
      body: { id: 'clash', steps: [step('a'), step('a'), step('credentials')] },
    });
    expect(saved.status).toBe(422);
    expect(saved.body.error.code).toBe('KG_ERR_TOOL_INVALID');
    expect(saved.body.error.message).toBe(
      "Invalid tool: steps[1].id: duplicate step id 'a'; steps[2].id: 'credentials' is a reserved name and cannot be a step id",
    );
    expect(saved.body.error.issues?.map((issue) => issue.path)).toEqual([
      ['steps', 1, 'id'],
      ['steps', 2, 'id'],
    ]);
    // The same through an update of an existing tool.
    expect((await api.call('POST', '/v1/tools', { body: { id: 'clash', steps: [step('a')] } })).status).toBe(
      201,
    );
    const updated = await api.call<ErrorBody>('PUT', '/v1/tools/clash', {
      body: { steps: [step('a'), step('a')] },
    });
    expect(updated.status).toBe(422);
    expect(updated.body.error.message).toBe("Invalid tool: steps[1].id: duplicate step id 'a'");
  });

  it("places a 400's schema problems at their field", async () => {
    const refused = await api.call<ErrorBody>('POST', '/v1/tools', {
      body: {
        id: 'bad',
        version: '1.2',
        steps: [{ id: 'a', config: { url: 'https://x.test' }, modify: 'no' }],
      },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.issues?.map((issue) => issue.path)).toEqual([
      ['steps', 0, 'modify'],
      ['version'],
    ]);
  });
});
