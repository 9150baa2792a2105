import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { API_VERSION, type KubeObject, type OwnerReference } from '../../crds/meta.ts';
import {
  CORE_KIND_SPECS,
  createEmbeddedResources,
  isResourceError,
  type ResourceClients,
  type ResourceError,
  validateWith,
  type WatchEvent,
} from '../../kube/resources/index.ts';
import { type DriverName, openStore, type Store, type StoreConfig } from '../../store/index.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts';

const DRIVERS: DriverName[] = ['pglite', 'pg'];

type Tool = KubeObject<
  { steps: string[]; title?: string },
  { phase?: string; ready?: boolean; note?: string }
>;
type ToolRun = KubeObject<{ runId: string }, { status?: string }>;
type Kinds = { tools: Tool; systems: KubeObject; toolRuns: ToolRun };

const ToolShape = z.object({ spec: z.object({ steps: z.array(z.string()).min(1) }) });

function tool(name: string, extra: Partial<Tool['metadata']> = {}, steps = ['fetch']): Tool {
  return { apiVersion: API_VERSION, kind: 'Tool', metadata: { name, ...extra }, spec: { steps } };
}

function toolRun(name: string, owners: Tool[] | OwnerReference[] = [], finalizers?: string[]): ToolRun {
  const ownerReferences = owners.map((owner) =>
    'metadata' in owner
      ? { apiVersion: API_VERSION, kind: 'Tool', name: owner.metadata.name, uid: owner.metadata.uid! }
      : owner,
  );
  return {
    apiVersion: API_VERSION,
    kind: 'ToolRun',
    metadata: { name, ownerReferences, ...(finalizers ? { finalizers } : {}) },
    spec: { runId: name },
  };
}

async function failure(promise: Promise<unknown>): Promise<ResourceError> {
  try {
    await promise;
  } catch (error) {
    if (isResourceError(error)) return error;
    throw error;
  }
  throw new Error('expected a ResourceError');
}

/** Collects the next n events of a watch, then stops it. */
async function take<T>(events: AsyncIterable<WatchEvent<T>>, n: number): Promise<WatchEvent<T>[]> {
  const seen: WatchEvent<T>[] = [];
  if (n === 0) return seen;
  for await (const event of events) {
    seen.push(event);
    if (seen.length === n) break;
  }
  return seen;
}

function summary(events: WatchEvent<KubeObject>[]): string[] {
  return events.map((event) => `${event.type} ${event.object.metadata.name}`);
}

describe.each(DRIVERS)('embedded resources on %s', (driver) => {
  let database: TestDatabase | undefined;
  let config: StoreConfig;
  let store: Store;
  let resources: ResourceClients<Kinds>;

  function inNamespace(
    namespace: string,
    options: { eventRetention?: number; compactEvery?: number } = {},
    on: Store = store,
  ) {
    return createEmbeddedResources<Kinds>(on.resources, {
      namespace,
      kinds: { ...CORE_KIND_SPECS, tools: { ...CORE_KIND_SPECS.tools, validate: validateWith(ToolShape) } },
      ...options,
    });
  }

  beforeAll(async () => {
    if (driver === 'pg') {
      database = await createTestDatabase(inject('databaseUrl'));
      config = { driver: 'pg', url: database.url };
    } else {
      config = { driver: 'pglite', dataDir: 'memory://' };
    }
    store = await openStore(config);
    resources = inNamespace('kubeglue');
  });

  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('sets uid, creationTimestamp, generation 1 and a resourceVersion on create, and drops status', async () => {
    const created = await resources.tools.create({
      ...tool('create-me', { labels: { team: 'a' } }),
      status: { ready: true },
    });
    expect(created.metadata).toEqual({
      name: 'create-me',
      namespace: 'kubeglue',
      labels: { team: 'a' },
      uid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      generation: 1,
      creationTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      resourceVersion: expect.stringMatching(/^\d+$/),
    });
    expect(created.status).toBeUndefined();
    expect(await resources.tools.get('create-me')).toEqual(created);
  });

  it('answers 409 AlreadyExists when the name is taken', async () => {
    await resources.tools.create(tool('taken'));
    const error = await failure(resources.tools.create(tool('taken', {}, ['other'])));
    expect([error.code, error.reason]).toEqual([409, 'AlreadyExists']);
    expect(error.message).toBe('tools.kubeglue.dev "taken" already exists');
  });

  it('answers 422 Invalid for objects the API server would refuse', async () => {
    const cases: Tool[] = [
      tool('no-steps', {}, []),
      tool('Not_A_DNS_Name'),
      { ...tool('wrong-kind'), kind: 'System' },
      tool('with-version', { resourceVersion: '5' }),
      tool('other-namespace', { namespace: 'elsewhere' }),
    ];
    for (const candidate of cases) {
      const error = await failure(resources.tools.create(candidate));
      expect([error.code, error.reason], candidate.metadata.name).toEqual([422, 'Invalid']);
      expect(await resources.tools.get(candidate.metadata.name)).toBeUndefined();
    }
    const error = await failure(resources.tools.create(tool('no-steps', {}, [])));
    expect(error.message).toBe(
      'Tool.kubeglue.dev "no-steps" is invalid: spec.steps: Too small: expected array to have >=1 items',
    );
  });

  it('answers undefined for get and 404 NotFound for writes of a missing object', async () => {
    expect(await resources.tools.get('missing')).toBeUndefined();
    // Started one at a time: a rejection nobody awaits yet would be an unhandled rejection.
    const attempts = [
      () => resources.tools.update(tool('missing', { resourceVersion: '1' })),
      () => resources.tools.patchStatus('missing', { ready: true }),
      () => resources.tools.delete('missing'),
    ];
    for (const attempt of attempts) {
      const error = await failure(attempt());
      expect([error.code, error.reason, error.message]).toEqual([
        404,
        'NotFound',
        'tools.kubeglue.dev "missing" not found',
      ]);
    }
  });

  it('lists by label selector at the newest resourceVersion', async () => {
    const ns = inNamespace(`list-${randomUUID().slice(0, 8)}`);
    await ns.tools.create(tool('b', { labels: { env: 'prod', team: 'x' } }));
    await ns.tools.create(tool('a', { labels: { env: 'prod' } }));
    const last = await ns.tools.create(tool('c', { labels: { env: 'dev' } }));
    const all = await ns.tools.list();
    expect(all.items.map((item) => item.metadata.name)).toEqual(['a', 'b', 'c']);
    expect(all.resourceVersion).toBe(last.metadata.resourceVersion);
    const prod = await ns.tools.list({ labelSelector: { env: 'prod' } });
    expect(prod.items.map((item) => item.metadata.name)).toEqual(['a', 'b']);
    expect((await ns.tools.list({ labelSelector: { env: 'prod', team: 'x' } })).items).toHaveLength(1);
    expect((await ns.toolRuns.list()).items).toEqual([]);
  });

  it('answers 409 Conflict to an update based on a stale resourceVersion', async () => {
    const created = await resources.tools.create(tool('stale'));
    await resources.tools.update({ ...created, spec: { steps: ['first'] } });
    const error = await failure(resources.tools.update({ ...created, spec: { steps: ['second'] } }));
    expect([error.code, error.reason]).toEqual([409, 'Conflict']);
    expect(error.message).toContain('the object has been modified');
    expect((await resources.tools.get('stale'))?.spec.steps).toEqual(['first']);
    const unversioned = await failure(
      resources.tools.update({ ...created, metadata: { ...created.metadata, resourceVersion: undefined } }),
    );
    expect(unversioned.code).toBe(422);
  });

  it('bumps generation only when the spec changes, and skips writes that change nothing', async () => {
    const created = await resources.tools.create(tool('gen'));
    const relabelled = await resources.tools.update({
      ...created,
      metadata: { ...created.metadata, labels: { x: 'y' } },
    });
    expect(relabelled.metadata.generation).toBe(1);
    expect(Number(relabelled.metadata.resourceVersion)).toBeGreaterThan(
      Number(created.metadata.resourceVersion),
    );
    const respecced = await resources.tools.update({ ...relabelled, spec: { steps: ['fetch', 'shape'] } });
    expect(respecced.metadata.generation).toBe(2);
    const unchanged = await resources.tools.update(respecced);
    expect(unchanged.metadata.resourceVersion).toBe(respecced.metadata.resourceVersion);
    expect(unchanged.metadata.uid).toBe(created.metadata.uid);
    expect(unchanged.metadata.creationTimestamp).toBe(created.metadata.creationTimestamp);
  });

  it('writes status only through the status subresource, as a merge patch', async () => {
    const created = await resources.tools.create(tool('status'));
    const patched = await resources.tools.patchStatus('status', { phase: 'Ready', note: 'hello' });
    expect(patched.status).toEqual({ phase: 'Ready', note: 'hello' });
    expect(patched.spec).toEqual(created.spec);
    expect(patched.metadata.generation).toBe(1);
    const merged = await resources.tools.patchStatus('status', { ready: true, note: null });
    expect(merged.status).toEqual({ phase: 'Ready', ready: true });
    // An update carries spec and metadata; the status it sends is ignored.
    const updated = await resources.tools.update({
      ...merged,
      spec: { steps: ['x'] },
      status: { phase: 'Hacked' },
    });
    expect(updated.status).toEqual({ phase: 'Ready', ready: true });
    expect(updated.metadata.generation).toBe(2);
    const stale = await failure(
      resources.tools.patchStatus(
        'status',
        { phase: 'Late' },
        { resourceVersion: merged.metadata.resourceVersion },
      ),
    );
    expect(stale.reason).toBe('Conflict');
    const current = await resources.tools.patchStatus(
      'status',
      { phase: 'OnTime' },
      { resourceVersion: updated.metadata.resourceVersion },
    );
    expect(current.status?.phase).toBe('OnTime');
  });

  it('deletes an object without finalizers at once', async () => {
    await resources.tools.create(tool('short-lived'));
    await resources.tools.delete('short-lived');
    expect(await resources.tools.get('short-lived')).toBeUndefined();
    expect((await failure(resources.tools.delete('short-lived'))).code).toBe(404);
  });

  it('only marks an object with finalizers for deletion until the last finalizer is removed', async () => {
    await resources.tools.create(tool('guarded', { finalizers: ['kubeglue.dev/a', 'kubeglue.dev/b'] }));
    await resources.tools.delete('guarded');
    const marked = await resources.tools.get('guarded');
    expect(marked?.metadata.deletionTimestamp).toMatch(/Z$/);
    await resources.tools.delete('guarded');
    expect((await resources.tools.get('guarded'))?.metadata.resourceVersion).toBe(
      marked?.metadata.resourceVersion,
    );

    const adding = await failure(
      resources.tools.update({
        ...marked!,
        metadata: { ...marked!.metadata, finalizers: ['kubeglue.dev/a', 'new'] },
      }),
    );
    expect(adding.code).toBe(422);
    const one = await resources.tools.update({
      ...marked!,
      metadata: { ...marked!.metadata, finalizers: ['kubeglue.dev/b'] },
    });
    expect(one.metadata.deletionTimestamp).toBe(marked?.metadata.deletionTimestamp);
    await resources.tools.update({ ...one, metadata: { ...one.metadata, finalizers: [] } });
    expect(await resources.tools.get('guarded')).toBeUndefined();
  });

  it('deletes the dependents of a deleted owner, except those another owner still holds', async () => {
    const ns = inNamespace(`gc-${randomUUID().slice(0, 8)}`);
    const owner = await ns.tools.create(tool('owner'));
    const other = await ns.tools.create(tool('other-owner'));
    await ns.toolRuns.create(toolRun('child-1', [owner]));
    const child2 = await ns.toolRuns.create(toolRun('child-2', [owner]));
    await ns.toolRuns.create(toolRun('shared', [owner, other]));
    await ns.toolRuns.create(toolRun('guarded-child', [owner], ['kubeglue.dev/keep']));
    const grandchildOwner: OwnerReference = {
      apiVersion: API_VERSION,
      kind: 'ToolRun',
      name: 'child-2',
      uid: child2.metadata.uid!,
    };
    await ns.toolRuns.create(toolRun('grandchild', [grandchildOwner]));
    await ns.toolRuns.create(toolRun('unrelated'));

    await ns.tools.delete('owner');

    const left = (await ns.toolRuns.list()).items;
    expect(left.map((item) => item.metadata.name)).toEqual(['guarded-child', 'shared', 'unrelated']);
    const shared = left.find((item) => item.metadata.name === 'shared');
    expect(shared?.metadata.ownerReferences?.map((ref) => ref.name)).toEqual(['other-owner']);
    const guarded = left.find((item) => item.metadata.name === 'guarded-child');
    expect(guarded?.metadata.deletionTimestamp).toBeDefined();
  });

  it('stamps every write with a newer resourceVersion from one sequence across kinds', async () => {
    const a = await resources.tools.create(tool('seq-a'));
    const b = await resources.toolRuns.create(toolRun('seq-b'));
    const c = await resources.tools.patchStatus('seq-a', { phase: 'x' });
    const versions = [a, b, c].map((obj) => Number(obj.metadata.resourceVersion));
    expect(versions).toEqual([...versions].sort((x, y) => x - y));
    expect(new Set(versions).size).toBe(3);
  });

  it('replays changes after a resourceVersion, then streams new ones', async () => {
    const ns = inNamespace(`watch-${randomUUID().slice(0, 8)}`);
    const a = await ns.tools.create(tool('a'));
    await ns.tools.create(tool('b'));
    await ns.toolRuns.create(toolRun('not-a-tool'));
    await ns.tools.update({ ...a, spec: { steps: ['changed'] } });
    await ns.tools.delete('b');
    const controller = new AbortController();
    const stream = ns.tools.watch({ resourceVersion: a.metadata.resourceVersion, signal: controller.signal });
    const iterator = stream[Symbol.asyncIterator]();
    const replayed = [await iterator.next(), await iterator.next(), await iterator.next()].map(
      (r) => r.value!,
    );
    expect(summary(replayed)).toEqual(['ADDED b', 'MODIFIED a', 'DELETED b']);
    expect(replayed[1]?.object.spec).toEqual({ steps: ['changed'] });
    const live = iterator.next();
    await ns.toolRuns.create(toolRun('still-not-a-tool'));
    const created = await ns.tools.create(tool('c'));
    const event = (await live).value!;
    expect(summary([event])).toEqual(['ADDED c']);
    expect(event.object.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    const pending = iterator.next();
    controller.abort();
    expect((await pending).done).toBe(true);
  });

  it('starts a watch without a resourceVersion with the current objects', async () => {
    const ns = inNamespace(`watch-${randomUUID().slice(0, 8)}`);
    await ns.tools.create(tool('x'));
    await ns.tools.create(tool('y'));
    const controller = new AbortController();
    const events = await take(ns.tools.watch({ signal: controller.signal }), 2);
    expect(summary(events)).toEqual(['ADDED x', 'ADDED y']);
  });

  it('delivers the DELETED events of garbage-collected dependents to their watchers', async () => {
    const ns = inNamespace(`watch-${randomUUID().slice(0, 8)}`);
    const owner = await ns.tools.create(tool('owner'));
    const child = await ns.toolRuns.create(toolRun('child', [owner]));
    const controller = new AbortController();
    const watching = take(
      ns.toolRuns.watch({ resourceVersion: child.metadata.resourceVersion, signal: controller.signal }),
      1,
    );
    await ns.tools.delete('owner');
    expect(summary(await watching)).toEqual(['DELETED child']);
  });

  it('answers 410 Gone to a watch from a compacted resourceVersion', async () => {
    const ns = inNamespace(`gone-${randomUUID().slice(0, 8)}`);
    const first = await ns.tools.create(tool('first'));
    await ns.tools.patchStatus('first', { phase: 'a' });
    await ns.tools.patchStatus('first', { phase: 'b' });
    await store.resources.compact(1);
    const error = await failure(
      take(
        ns.tools.watch({
          resourceVersion: first.metadata.resourceVersion,
          signal: new AbortController().signal,
        }),
        1,
      ),
    );
    expect([error.code, error.reason]).toEqual([410, 'Gone']);
    expect(error.message).toMatch(/^too old resource version: \d+ \(\d+\)$/);

    // Relisting and watching from the list's version works again.
    const listed = await ns.tools.list();
    const controller = new AbortController();
    const watching = take(
      ns.tools.watch({ resourceVersion: listed.resourceVersion, signal: controller.signal }),
      1,
    );
    await ns.tools.patchStatus('first', { phase: 'c' });
    expect((await watching)[0]?.object.status).toEqual({ phase: 'c' });
  });

  it('compacts the change feed by itself so it stays bounded', async () => {
    const namespace = `bounded-${randomUUID().slice(0, 8)}`;
    const ns = inNamespace(namespace, { eventRetention: 5, compactEvery: 5 });
    const first = await ns.tools.create(tool('busy'));
    for (let i = 0; i < 30; i++) await ns.tools.patchStatus('busy', { note: `n${i}` });
    // Compaction runs after the write that triggers it has returned.
    await expect
      .poll(async () => (await store.resources.eventsAfter('Tool', namespace, 0, 1000)).events.length)
      .toBeLessThanOrEqual(10);
    const error = await failure(
      take(
        ns.tools.watch({
          resourceVersion: first.metadata.resourceVersion,
          signal: new AbortController().signal,
        }),
        1,
      ),
    );
    expect(error.reason).toBe('Gone');
  });

  it.runIf(driver === 'pg')('wakes watchers in another process on the same database', async () => {
    const otherStore = await openStore(config);
    try {
      const namespace = `remote-${randomUUID().slice(0, 8)}`;
      const local = inNamespace(namespace);
      const remote = inNamespace(namespace, {}, otherStore);
      const { resourceVersion } = await remote.tools.list();
      const controller = new AbortController();
      const watching = take(remote.tools.watch({ resourceVersion, signal: controller.signal }), 1);
      // Let the remote watch go idle first, so only a notification can wake it.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await local.tools.create(tool('from-elsewhere'));
      expect(summary(await watching)).toEqual(['ADDED from-elsewhere']);
    } finally {
      await otherStore.close();
    }
  });
});
