import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tool } from '../../../contract/api/tool.ts';
import { toolFromResource, toolToResource } from '../../../contract/resources/convert.ts';
import type { ToolResource } from '../../../contract/resources/kinds.ts';
import {
  createEmbeddedKubeglueResources,
  isResourceError,
  type KubeglueResources,
} from '../../../kube/resources/index.ts';
import { openStore, type Store } from '../../../store/index.ts';

let store: Store;
let resources: KubeglueResources;

beforeAll(async () => {
  store = await openStore({ driver: 'sqlite', path: ':memory:' });
  resources = createEmbeddedKubeglueResources(store.resources, 'default');
});
afterAll(async () => {
  await store.close();
});

const tool = Tool.parse({
  id: 'Fetch_Users.V2',
  steps: [{ id: 'get', config: { url: 'https://x.test/users' } }],
});

describe('kubeglue resources on the embedded store', () => {
  it('stores a REST tool as a Tool resource and reads it back unchanged', async () => {
    const created = await resources.tools.create(toolToResource(tool, 'default'));
    expect(created.metadata).toMatchObject({ generation: 1, namespace: 'default' });
    expect(created.metadata.uid).toBeTruthy();
    const fetched = (await resources.tools.get(created.metadata.name)) as ToolResource;
    const { createdAt: _c, updatedAt: _u, ...back } = toolFromResource(fetched);
    const { createdAt: _c2, updatedAt: _u2, ...original } = tool;
    expect(back).toEqual(original);
  });

  it('refuses a Tool whose spec breaks the schema with 422 naming the field', async () => {
    const bad = toolToResource({ ...tool, id: 'bad-tool' }, 'default');
    (bad.spec.steps[0] as { failureBehavior: string }).failureBehavior = 'maybe';
    const error = await resources.tools.create(bad).catch((e: unknown) => e);
    expect(isResourceError(error) && error.code).toBe(422);
    expect((error as Error).message).toContain('spec.steps.0.failureBehavior');
  });
});
