import { beforeAll, describe, expect, it } from 'vitest';
import type { ToolResource, ToolRunResource } from '../../contract/resources/kinds.ts';
import { API_VERSION, type OwnerReference } from '../../contract/resources/meta.ts';
import {
  type BookmarkEvent,
  type CoordinationKinds,
  isResourceError,
  type KubeglueKinds,
  type ResourceClient,
  type ResourceClients,
  type ResourceError,
  type WatchEvent,
  type WatchOptions,
  type WireObject,
} from '../../kube/resources/index.ts';
import type { Event, Lease } from '../../kube/types.ts';

/**
 * The behaviour every Resources implementation shares with the Kubernetes API server, as one suite: run
 * it against the embedded store and a real API server (test/integration/resources-*.test.ts). Objects are
 * real kubeglue kinds, valid under the CRDs' schemas, and every test works in namespaces of its own.
 * Implementation-specific things (exact validation wording, how resourceVersions look, compaction) are
 * tested beside each implementation.
 */

export type ContractKinds = KubeglueKinds & CoordinationKinds;
export type ContractResources = ResourceClients<ContractKinds>;

export interface ContractNamespace {
  name: string;
  resources: ContractResources;
}

export interface ContractTarget {
  /** Clients of a new, empty namespace. */
  open(prefix: string): Promise<ContractNamespace>;
  /** A resourceVersion that a watch of Tools in ns can no longer start from (410 Gone). */
  expiredVersion(ns: ContractNamespace): Promise<string>;
  /** Dependents of a deleted owner go with the delete ('immediate') or soon after, by a collector ('eventual'). */
  garbageCollection: 'immediate' | 'eventual' | 'none';
}

// --- fixtures: valid under the CRD schemas (every default spelled out, so both sides store the same) ---

const STEP = {
  config: { type: 'transform' as const, transformCode: '(sourceData) => sourceData' },
  modify: false,
  failureBehavior: 'fail' as const,
};

export function tool(
  name: string,
  metadata: Partial<ToolResource['metadata']> = {},
  stepIds = ['fetch'],
): ToolResource {
  return {
    apiVersion: API_VERSION,
    kind: 'Tool',
    metadata: { name, ...metadata },
    spec: { steps: stepIds.map((id) => ({ id, ...STEP })), archived: false },
  };
}

export function toolRun(
  name: string,
  owners: (ToolResource | OwnerReference)[] = [],
  finalizers?: string[],
): ToolRunResource {
  const ownerReferences = owners.map((owner) =>
    'spec' in owner
      ? { apiVersion: API_VERSION, kind: 'Tool', name: owner.metadata.name, uid: owner.metadata.uid ?? '' }
      : owner,
  );
  return {
    apiVersion: API_VERSION,
    kind: 'ToolRun',
    metadata: {
      name,
      ...(ownerReferences.length ? { ownerReferences } : {}),
      ...(finalizers ? { finalizers } : {}),
    },
    spec: {
      runId: name,
      tool: { id: 'contract', steps: [{ id: 'fetch', ...STEP }], archived: false },
      requestSource: 'api',
      executionMode: 'prod',
    },
  };
}

export function lease(name: string, holderIdentity: string): Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name },
    spec: { holderIdentity, leaseDurationSeconds: 15 },
  };
}

export function event(name: string, namespace: string, about: ToolResource): Event {
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name },
    involvedObject: {
      apiVersion: about.apiVersion,
      kind: about.kind,
      name: about.metadata.name,
      namespace,
      ...(about.metadata.uid ? { uid: about.metadata.uid } : {}),
    },
    reason: 'Tested',
    message: 'the contract suite was here',
    type: 'Normal',
    count: 1,
    firstTimestamp: now,
    lastTimestamp: now,
    source: { component: 'kubeglue-test' },
  };
}

// --- helpers ---

export async function failure(promise: Promise<unknown>): Promise<ResourceError> {
  try {
    await promise;
  } catch (error) {
    if (isResourceError(error)) return error;
    throw error;
  }
  throw new Error('expected a ResourceError');
}

type AnyEvent<T> = WatchEvent<T> | BookmarkEvent;

/** The next n events (bookmarks only when asked for) of a watch, or fewer when it ends or timeoutMs passes. */
export async function collect<T extends WireObject>(
  client: ResourceClient<T>,
  options: Omit<WatchOptions, 'signal'>,
  n: number,
  timeoutMs = 15_000,
): Promise<AnyEvent<T>[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const seen: AnyEvent<T>[] = [];
  try {
    for await (const event of client.watch({ ...options, signal: controller.signal }) as AsyncIterable<
      AnyEvent<T>
    >) {
      seen.push(event);
      if (seen.length >= n) break;
    }
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return seen;
}

export function summary(events: AnyEvent<WireObject>[]): string[] {
  return events.map((event) =>
    event.type === 'BOOKMARK' ? 'BOOKMARK' : `${event.type} ${event.object.metadata.name}`,
  );
}

const names = (items: WireObject[]) => items.map((item) => item.metadata.name);

// --- the suite ---

export function describeResourcesContract(getTarget: () => ContractTarget): void {
  describe('the Resources contract', () => {
    let target: ContractTarget;
    let ns: ContractNamespace;
    let resources: ContractResources;

    beforeAll(async () => {
      target = getTarget();
      ns = await target.open('contract');
      resources = ns.resources;
    });

    describe('objects', () => {
      it('sets uid, creationTimestamp, generation 1 and a resourceVersion on create, and drops status', async () => {
        const created = await resources.tools.create({
          ...tool('create-me', { labels: { team: 'a' } }),
          status: { stepCount: 1 },
        });
        expect(created.metadata).toEqual({
          name: 'create-me',
          namespace: ns.name,
          labels: { team: 'a' },
          uid: expect.stringMatching(/^[0-9a-f-]{36}$/),
          generation: 1,
          creationTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
          resourceVersion: expect.stringMatching(/.+/),
        });
        expect(created.status).toBeUndefined();
        // Compared by field: a real API server also fills in the CRD schema's defaults.
        expect(created.spec.steps.map((step) => step.id)).toEqual(['fetch']);
        expect(created.spec.archived).toBe(false);
        expect(await resources.tools.get('create-me')).toEqual(created);
      });

      it('answers 409 AlreadyExists when the name is taken', async () => {
        await resources.tools.create(tool('taken'));
        const error = await failure(resources.tools.create(tool('taken', {}, ['other'])));
        expect([error.code, error.reason]).toEqual([409, 'AlreadyExists']);
        expect(error.message).toBe('tools.kubeglue.dev "taken" already exists');
      });

      it('answers 422 Invalid for objects the API server would refuse, and stores none of them', async () => {
        const cases: ToolResource[] = [
          tool('no-steps', {}, []),
          tool('Not_A_DNS_Name'),
          { ...tool('wrong-kind'), kind: 'System' } as unknown as ToolResource,
          tool('with-version', { resourceVersion: '5' }),
          tool('other-namespace', { namespace: 'elsewhere' }),
        ];
        for (const candidate of cases) {
          const error = await failure(resources.tools.create(candidate));
          expect([error.code, error.reason], candidate.metadata.name).toEqual([422, 'Invalid']);
          expect(error.message, candidate.metadata.name).toMatch(
            new RegExp(`^Tool\\.kubeglue\\.dev "${candidate.metadata.name}" is invalid: `),
          );
          expect(await resources.tools.get(candidate.metadata.name)).toBeUndefined();
        }
      });

      it('answers undefined for get and 404 NotFound for writes of a missing object', async () => {
        expect(await resources.tools.get('missing')).toBeUndefined();
        // Started one at a time: a rejection nobody awaits yet would be an unhandled rejection.
        const attempts = [
          () => resources.tools.update(tool('missing', { resourceVersion: '1' })),
          () => resources.tools.patch('missing', { metadata: { labels: { a: 'b' } } }),
          () => resources.tools.patchStatus('missing', { stepCount: 1 }),
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

      it('lists whole, sorted by name, by label selector, page by page', async () => {
        const { resources: own } = await target.open('list');
        await own.tools.create(tool('b', { labels: { env: 'prod', team: 'x' } }));
        await own.tools.create(tool('a', { labels: { env: 'prod' } }));
        await own.tools.create(tool('c', { labels: { env: 'dev' } }));
        const all = await own.tools.list();
        expect(names(all.items)).toEqual(['a', 'b', 'c']);
        expect(all.resourceVersion).toMatch(/.+/);
        expect(all.items.every((item) => item.kind === 'Tool' && item.apiVersion === API_VERSION)).toBe(true);
        expect(names((await own.tools.list({ pageSize: 1 })).items)).toEqual(['a', 'b', 'c']);
        expect(names((await own.tools.list({ labelSelector: { env: 'prod' } })).items)).toEqual(['a', 'b']);
        expect((await own.tools.list({ labelSelector: { env: 'prod', team: 'x' } })).items).toHaveLength(1);
        expect((await own.toolRuns.list()).items).toEqual([]);
      });
    });

    describe('writes', () => {
      it('answers 409 Conflict to an update based on a stale resourceVersion', async () => {
        const created = await resources.tools.create(tool('stale'));
        await resources.tools.update({ ...created, spec: tool('x', {}, ['first']).spec });
        const error = await failure(
          resources.tools.update({ ...created, spec: tool('x', {}, ['second']).spec }),
        );
        expect([error.code, error.reason]).toEqual([409, 'Conflict']);
        expect(error.message).toContain('the object has been modified');
        expect((await resources.tools.get('stale'))?.spec.steps.map((step) => step.id)).toEqual(['first']);
        const unversioned = await failure(
          resources.tools.update({
            ...created,
            metadata: { ...created.metadata, resourceVersion: undefined },
          }),
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
        expect(relabelled.metadata.resourceVersion).not.toBe(created.metadata.resourceVersion);
        const respecced = await resources.tools.update({
          ...relabelled,
          spec: tool('x', {}, ['a', 'b']).spec,
        });
        expect(respecced.metadata.generation).toBe(2);
        const unchanged = await resources.tools.update(respecced);
        expect(unchanged.metadata.resourceVersion).toBe(respecced.metadata.resourceVersion);
        expect(unchanged.metadata.uid).toBe(created.metadata.uid);
        expect(unchanged.metadata.creationTimestamp).toBe(created.metadata.creationTimestamp);
      });

      it('writes status only through the status subresource, as a merge patch', async () => {
        const created = await resources.tools.create(tool('status'));
        const patched = await resources.tools.patchStatus('status', { stepCount: 1, observedGeneration: 1 });
        expect(patched.status).toEqual({ stepCount: 1, observedGeneration: 1 });
        expect(patched.spec).toEqual(created.spec);
        expect(patched.metadata.generation).toBe(1);
        const condition = {
          type: 'Ready',
          status: 'True' as const,
          reason: 'Compiled',
          message: 'ok',
          lastTransitionTime: '2024-01-01T00:00:00Z',
        };
        const merged = await resources.tools.patchStatus('status', {
          conditions: [condition],
          stepCount: null,
        });
        expect(merged.status).toEqual({ observedGeneration: 1, conditions: [condition] });
        // An update carries spec and metadata; the status it sends is ignored.
        const updated = await resources.tools.update({
          ...merged,
          spec: tool('x', {}, ['x']).spec,
          status: { stepCount: 99 },
        });
        expect(updated.status).toEqual({ observedGeneration: 1, conditions: [condition] });
        expect(updated.metadata.generation).toBe(2);
      });

      it('applies a status patch conditionally: 409 Conflict on a stale resourceVersion', async () => {
        const created = await resources.tools.create(tool('status-if'));
        const first = await resources.tools.patchStatus(
          'status-if',
          { stepCount: 1 },
          { resourceVersion: created.metadata.resourceVersion },
        );
        const stale = await failure(
          resources.tools.patchStatus(
            'status-if',
            { stepCount: 2 },
            { resourceVersion: created.metadata.resourceVersion },
          ),
        );
        expect([stale.code, stale.reason]).toEqual([409, 'Conflict']);
        expect((await resources.tools.get('status-if'))?.status?.stepCount).toBe(1);
        const second = await resources.tools.patchStatus(
          'status-if',
          { stepCount: 2 },
          { resourceVersion: first.metadata.resourceVersion },
        );
        expect(second.status?.stepCount).toBe(2);
      });

      it('merge-patches metadata and spec, leaving status alone', async () => {
        const created = await resources.tools.create(
          tool('patch-me', { labels: { keep: 'yes', drop: 'yes' } }),
        );
        await resources.tools.patchStatus('patch-me', { stepCount: 1 });
        const relabelled = await resources.tools.patch('patch-me', {
          metadata: { labels: { drop: null, added: 'now' }, annotations: { note: 'hi' } },
        });
        expect(relabelled.metadata.labels).toEqual({ keep: 'yes', added: 'now' });
        expect(relabelled.metadata.annotations).toEqual({ note: 'hi' });
        expect(relabelled.metadata.generation).toBe(1);
        const respecced = await resources.tools.patch('patch-me', {
          spec: { folder: 'team/a', steps: tool('x', {}, ['one', 'two']).spec.steps },
          status: { stepCount: 42 },
        });
        expect(respecced.spec.folder).toBe('team/a');
        expect(respecced.spec.steps.map((step) => step.id)).toEqual(['one', 'two']);
        expect(respecced.metadata.generation).toBe(2);
        expect(respecced.status).toEqual({ stepCount: 1 });
        expect(respecced.metadata.uid).toBe(created.metadata.uid);
      });

      it('applies a patch conditionally: 409 Conflict on a stale resourceVersion', async () => {
        const created = await resources.tools.create(tool('patch-if'));
        const first = await resources.tools.patch(
          'patch-if',
          { metadata: { labels: { n: '1' } } },
          { resourceVersion: created.metadata.resourceVersion },
        );
        const stale = await failure(
          resources.tools.patch(
            'patch-if',
            { metadata: { labels: { n: '2' } } },
            { resourceVersion: created.metadata.resourceVersion },
          ),
        );
        expect([stale.code, stale.reason]).toEqual([409, 'Conflict']);
        const second = await resources.tools.patch(
          'patch-if',
          { metadata: { labels: { n: '2' } } },
          { resourceVersion: first.metadata.resourceVersion },
        );
        expect(second.metadata.labels).toEqual({ n: '2' });
      });
    });

    describe('deletion', () => {
      it('deletes an object without finalizers at once', async () => {
        await resources.tools.create(tool('short-lived'));
        await resources.tools.delete('short-lived');
        expect(await resources.tools.get('short-lived')).toBeUndefined();
        expect((await failure(resources.tools.delete('short-lived'))).code).toBe(404);
      });

      it('deletes only when the preconditions hold', async () => {
        const created = await resources.tools.create(tool('preconditioned'));
        const changed = await resources.tools.patch('preconditioned', { metadata: { labels: { v: '2' } } });
        const wrongUid = await failure(
          resources.tools.delete('preconditioned', {
            preconditions: { uid: '00000000-0000-0000-0000-000000000000' },
          }),
        );
        expect([wrongUid.code, wrongUid.reason]).toEqual([409, 'Conflict']);
        const staleVersion = await failure(
          resources.tools.delete('preconditioned', {
            preconditions: { resourceVersion: created.metadata.resourceVersion },
          }),
        );
        expect([staleVersion.code, staleVersion.reason]).toEqual([409, 'Conflict']);
        expect(await resources.tools.get('preconditioned')).toBeDefined();
        await resources.tools.delete('preconditioned', {
          gracePeriodSeconds: 0,
          preconditions: { uid: created.metadata.uid, resourceVersion: changed.metadata.resourceVersion },
        });
        expect(await resources.tools.get('preconditioned')).toBeUndefined();
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
            metadata: { ...marked!.metadata, finalizers: ['kubeglue.dev/a', 'kubeglue.dev/new'] },
          }),
        );
        expect(adding.code).toBe(422);
        const one = await resources.tools.update({
          ...marked!,
          metadata: { ...marked!.metadata, finalizers: ['kubeglue.dev/b'] },
        });
        expect(one.metadata.deletionTimestamp).toBe(marked?.metadata.deletionTimestamp);
        await resources.tools.patch('guarded', { metadata: { finalizers: null } });
        expect(await resources.tools.get('guarded')).toBeUndefined();
      });

      it('deletes the dependents of a deleted owner, except those another owner still holds', async () => {
        if (target.garbageCollection === 'none') return;
        const { resources: own } = await target.open('gc');
        const owner = await own.tools.create(tool('owner'));
        const other = await own.tools.create(tool('other-owner'));
        await own.toolRuns.create(toolRun('child-1', [owner]));
        const child2 = await own.toolRuns.create(toolRun('child-2', [owner]));
        await own.toolRuns.create(toolRun('shared', [owner, other]));
        await own.toolRuns.create(toolRun('guarded-child', [owner], ['kubeglue.dev/keep']));
        const grandchildOwner: OwnerReference = {
          apiVersion: API_VERSION,
          kind: 'ToolRun',
          name: 'child-2',
          uid: child2.metadata.uid!,
        };
        await own.toolRuns.create(toolRun('grandchild', [grandchildOwner]));
        await own.toolRuns.create(toolRun('unrelated'));

        await own.tools.delete('owner');

        const settled = async () => {
          const items = (await own.toolRuns.list()).items;
          const shared = items.find((item) => item.metadata.name === 'shared');
          const guarded = items.find((item) => item.metadata.name === 'guarded-child');
          return {
            names: names(items),
            sharedOwners: shared?.metadata.ownerReferences?.map((ref) => ref.name),
            guardedMarked: guarded?.metadata.deletionTimestamp !== undefined,
          };
        };
        const expected = {
          names: ['guarded-child', 'shared', 'unrelated'],
          sharedOwners: ['other-owner'],
          guardedMarked: true,
        };
        if (target.garbageCollection === 'immediate') expect(await settled()).toEqual(expected);
        // The Kubernetes garbage collector works from its own informers (and discovers new CRDs every 30 s).
        else await expect.poll(settled, { timeout: 90_000, interval: 500 }).toEqual(expected);
      }, 120_000);
    });

    describe('watch', () => {
      it('replays changes after a resourceVersion, then streams new ones', async () => {
        const { resources: own } = await target.open('watch');
        const a = await own.tools.create(tool('a'));
        await own.tools.create(tool('b'));
        await own.toolRuns.create(toolRun('not-a-tool'));
        await own.tools.update({ ...a, spec: tool('x', {}, ['changed']).spec });
        await own.tools.delete('b');
        const controller = new AbortController();
        const stream = own.tools.watch({
          resourceVersion: a.metadata.resourceVersion,
          signal: controller.signal,
        });
        const iterator = stream[Symbol.asyncIterator]();
        const replayed = [await iterator.next(), await iterator.next(), await iterator.next()].map(
          (r) => r.value as WatchEvent<ToolResource>,
        );
        expect(summary(replayed)).toEqual(['ADDED b', 'MODIFIED a', 'DELETED b']);
        expect(replayed[1]?.object.spec.steps.map((step) => step.id)).toEqual(['changed']);
        const live = iterator.next();
        await own.toolRuns.create(toolRun('still-not-a-tool'));
        const created = await own.tools.create(tool('c'));
        const event = (await live).value as WatchEvent<ToolResource>;
        expect(summary([event])).toEqual(['ADDED c']);
        expect(event.object.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
        const pending = iterator.next();
        controller.abort();
        expect((await pending).done).toBe(true);
      });

      it('starts a watch without a resourceVersion with the current objects', async () => {
        const { resources: own } = await target.open('watch');
        await own.tools.create(tool('x'));
        await own.tools.create(tool('y'));
        const events = await collect(own.tools, {}, 2);
        expect(summary(events).sort()).toEqual(['ADDED x', 'ADDED y']);
      });

      it('resumes from the version of any event without repeating it', async () => {
        const { resources: own } = await target.open('watch');
        const { resourceVersion } = await own.tools.list();
        await own.tools.create(tool('one'));
        await own.tools.create(tool('two'));
        const [first] = await collect(own.tools, { resourceVersion }, 1);
        expect(summary(first ? [first] : [])).toEqual(['ADDED one']);
        const resumed = await collect(
          own.tools,
          { resourceVersion: first?.object.metadata.resourceVersion },
          1,
        );
        expect(summary(resumed)).toEqual(['ADDED two']);
      });

      it('ends a watch cleanly at its timeout; resuming from the last version seen misses nothing', async () => {
        const { resources: own } = await target.open('timeout');
        await own.tools.create(tool('before'));
        const { resourceVersion } = await own.tools.list();
        const started = Date.now();
        const events = await collect(
          own.tools,
          { resourceVersion, timeoutSeconds: 3, bookmarks: true },
          100,
          20_000,
        );
        expect(Date.now() - started).toBeLessThan(15_000);
        expect(events.filter((e) => e.type !== 'BOOKMARK')).toEqual([]);
        // Bookmarks are the server's choice (v1.20 sends none to so short a watch); when sent, they are
        // versions to resume from.
        const last = events.at(-1)?.object.metadata.resourceVersion ?? resourceVersion;
        await own.tools.create(tool('after'));
        const resumed = await collect(own.tools, { resourceVersion: last }, 1);
        expect(summary(resumed)).toEqual(['ADDED after']);
      }, 40_000);

      it('watches by label selector; an object leaving the selection is deleted for the watcher', async () => {
        const { resources: own } = await target.open('watch');
        const { resourceVersion } = await own.tools.list();
        const watching = collect(own.tools, { resourceVersion, labelSelector: { pick: 'me' } }, 2);
        await own.tools.create(tool('ignored', { labels: { pick: 'other' } }));
        const picked = await own.tools.create(tool('picked', { labels: { pick: 'me' } }));
        await own.tools.update({
          ...picked,
          metadata: { ...picked.metadata, labels: { pick: 'no-longer' } },
        });
        expect(summary(await watching)).toEqual(['ADDED picked', 'DELETED picked']);
      });

      it('delivers the DELETED events of garbage-collected dependents to their watchers', async () => {
        if (target.garbageCollection === 'none') return;
        const { resources: own } = await target.open('watch');
        const owner = await own.tools.create(tool('owner'));
        const child = await own.toolRuns.create(toolRun('child', [owner]));
        const watching = collect(
          own.toolRuns,
          { resourceVersion: child.metadata.resourceVersion },
          1,
          90_000,
        );
        await own.tools.delete('owner');
        expect(summary(await watching)).toEqual(['DELETED child']);
      }, 120_000);

      it('answers 410 Gone to a watch from an expired resourceVersion; a relist recovers', async () => {
        const own = await target.open('gone');
        const first = await own.resources.tools.create(tool('first'));
        await own.resources.tools.patchStatus('first', { stepCount: 1 });
        const expired = await target.expiredVersion(own);
        const error = await failure(collect(own.resources.tools, { resourceVersion: expired }, 1));
        expect([error.code, error.reason]).toEqual([410, 'Gone']);
        expect(error.message).toMatch(/too old resource version/);

        const listed = await own.resources.tools.list();
        expect(names(listed.items)).toEqual(['first']);
        const watching = collect(own.resources.tools, { resourceVersion: listed.resourceVersion }, 1);
        await own.resources.tools.patchStatus('first', { stepCount: 2 });
        const [event] = await watching;
        expect(event?.type === 'MODIFIED' && event.object.status).toEqual({ stepCount: 2 });
        expect(first.metadata.uid).toBe(event?.type === 'MODIFIED' ? event.object.metadata.uid : '');
      });
    });

    describe('leases and events', () => {
      it('keeps Leases with optimistic concurrency', async () => {
        const created = await resources.leases.create(lease('contract-lease', 'a'));
        expect(created.spec).toEqual({ holderIdentity: 'a', leaseDurationSeconds: 15 });
        const taken = await resources.leases.update({
          ...created,
          spec: { ...created.spec, holderIdentity: 'b' },
        });
        const stale = await failure(
          resources.leases.update({ ...created, spec: { ...created.spec, holderIdentity: 'c' } }),
        );
        expect([stale.code, stale.reason]).toEqual([409, 'Conflict']);
        const released = await resources.leases.patch(
          'contract-lease',
          { spec: { holderIdentity: '' } },
          { resourceVersion: taken.metadata.resourceVersion },
        );
        expect(released.spec.holderIdentity).toBe('');
        expect((await resources.leases.get('contract-lease'))?.spec).toEqual({
          holderIdentity: '',
          leaseDurationSeconds: 15,
        });
      });

      it('records Events about objects', async () => {
        const about = await resources.tools.create(tool('eventful'));
        const created = await resources.events.create(event('eventful.1', ns.name, about));
        expect(created.involvedObject.name).toBe('eventful');
        expect(created.reason).toBe('Tested');
        const counted = await resources.events.patch('eventful.1', { count: 2 });
        expect(counted.count).toBe(2);
        const listed = await resources.events.list();
        expect(listed.items.map((item) => [item.metadata.name, item.count])).toContainEqual([
          'eventful.1',
          2,
        ]);
      });
    });
  });
}
