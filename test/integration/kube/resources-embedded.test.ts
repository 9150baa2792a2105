import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  COORDINATION_KIND_SPECS,
  createEmbeddedResources,
  KUBEGLUE_KIND_SPECS,
  type WatchEvent,
  type WireObject,
} from '../../../kube/resources/index.ts';
import { openStore, type Store } from '../../../store/index.ts';
import {
  type ContractKinds,
  type ContractNamespace,
  collect,
  describeResourcesContract,
  failure,
  summary,
  tool,
  toolRun,
} from '../../support/resources-contract.ts';
import { describeStore } from '../../support/store.ts';

describeStore('embedded resources', (store, driver, config) => {
  function open(
    prefix: string,
    options: { eventRetention?: number; compactEvery?: number } = {},
    on: Store = store,
    name = `${prefix}-${randomUUID().slice(0, 8)}`,
  ): ContractNamespace {
    const resources = createEmbeddedResources<ContractKinds>(on.resources, {
      namespace: name,
      kinds: { ...KUBEGLUE_KIND_SPECS, ...COORDINATION_KIND_SPECS },
      ...options,
    });
    return { name, resources };
  }

  describeResourcesContract(() => ({
    open: async (prefix) => open(prefix),
    expiredVersion: async (ns) => {
      const { resourceVersion } = await ns.resources.tools.list();
      // Two more revisions, then keep only the newest: the listed one is history.
      await ns.resources.leases.create({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'expire' },
        spec: {},
      });
      await ns.resources.leases.delete('expire');
      await store.resources.compact(1);
      return resourceVersion;
    },
    garbageCollection: 'immediate',
  }));

  describe('specific to the embedded store', () => {
    it('words validation failures after the zod schemas of the CRDs', async () => {
      const { resources } = open('wording');
      const error = await failure(resources.tools.create(tool('no-steps', {}, [])));
      expect(error.message).toBe(
        'Tool.kubeglue.dev "no-steps" is invalid: spec.steps: a tool needs at least one step',
      );
    });

    it('lists at the version of the last write', async () => {
      const { resources } = open('list');
      await resources.tools.create(tool('a'));
      const last = await resources.tools.create(tool('b'));
      expect((await resources.tools.list()).resourceVersion).toBe(last.metadata.resourceVersion);
    });

    it('stamps every write with a newer resourceVersion from one sequence across kinds', async () => {
      const { resources } = open('seq');
      const a = await resources.tools.create(tool('seq-a'));
      const b = await resources.toolRuns.create(toolRun('seq-b'));
      const c = await resources.tools.patchStatus('seq-a', { stepCount: 1 });
      // This store's versions are its revisions: numbers, which only it may compare.
      const versions = [a, b, c].map((obj) => Number(obj.metadata.resourceVersion));
      expect(versions).toEqual([...versions].sort((x, y) => x - y));
      expect(new Set(versions).size).toBe(3);
    });

    it('refuses patchStatus for kinds without a status subresource', async () => {
      const { resources } = open('no-status');
      await resources.leases.create({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'l' },
        spec: {},
      });
      const error = await failure(resources.leases.patchStatus('l', {} as never));
      expect(error.code).toBe(404);
    });

    it('sends a bookmark just before a watch times out', async () => {
      const { resources } = open('bookmark');
      const { resourceVersion } = await resources.tools.list();
      await resources.toolRuns.create(toolRun('other-kind'));
      const events = await collect(
        resources.tools,
        { resourceVersion, timeoutSeconds: 1, bookmarks: true },
        10,
      );
      expect(summary(events)).toEqual(['BOOKMARK']);
      // Writes of other kinds move an idle watch's version on, so it does not fall behind compaction.
      expect(events[0]?.object.metadata.resourceVersion).not.toBe(resourceVersion);
      await resources.tools.create(tool('after'));
      const resumed = await collect(
        resources.tools,
        { resourceVersion: events[0]?.object.metadata.resourceVersion },
        1,
      );
      expect(summary(resumed)).toEqual(['ADDED after']);
    });

    it('compacts the change feed by itself so it stays bounded', async () => {
      const ns = open('bounded', { eventRetention: 5, compactEvery: 5 });
      const first = await ns.resources.tools.create(tool('busy'));
      for (let i = 0; i < 30; i++) await ns.resources.tools.patchStatus('busy', { stepCount: i });
      // Compaction runs after the write that triggers it has returned.
      await expect
        .poll(async () => (await store.resources.eventsAfter('Tool', ns.name, 0, 1000)).events.length)
        .toBeLessThanOrEqual(10);
      const error = await failure(
        collect(ns.resources.tools, { resourceVersion: first.metadata.resourceVersion }, 1),
      );
      expect(error.reason).toBe('Gone');
    });

    it('leaves watches of other kinds asleep when one kind is written', async () => {
      const reads: string[] = [];
      const counted: Store['resources'] = {
        ...store.resources,
        eventsAfter: (kind, namespace, after, limit) => {
          reads.push(kind);
          return store.resources.eventsAfter(kind, namespace, after, limit);
        },
      };
      const name = `asleep-${randomUUID().slice(0, 8)}`;
      const kinds = { ...KUBEGLUE_KIND_SPECS, ...COORDINATION_KIND_SPECS };
      const watched = createEmbeddedResources<ContractKinds>(counted, { namespace: name, kinds });
      const { resources } = open('asleep', {}, store, name);
      const { resourceVersion } = await resources.tools.list();
      const toolEvents = collect(watched.tools, { resourceVersion }, 1);
      const runEvents = collect(watched.toolRuns, { resourceVersion }, 3);
      // Both watches have read once and wait.
      await expect.poll(() => reads.length).toBe(2);
      await resources.toolRuns.create(toolRun('busy'));
      await resources.toolRuns.patchStatus('busy', { status: 'running' });
      await resources.toolRuns.patchStatus('busy', { status: 'success' });
      expect(summary(await runEvents)).toEqual(['ADDED busy', 'MODIFIED busy', 'MODIFIED busy']);
      await resources.tools.create(tool('at-last'));
      expect(summary(await toolEvents)).toEqual(['ADDED at-last']);
      // The tools watch read twice: when it started and after the tool's write, never for the ToolRuns.
      expect(reads.filter((kind) => kind === 'Tool')).toHaveLength(2);
    });

    it('keeps an idle watch ahead of compaction while only other kinds are written', async () => {
      // Retention 40: an idle watch reads again once the feed is 20 revisions past it.
      const ns = open('ahead', { eventRetention: 40, compactEvery: 10 });
      const { resourceVersion } = await ns.resources.tools.list();
      const toolEvents = collect(ns.resources.tools, { resourceVersion }, 1);
      await ns.resources.toolRuns.create(toolRun('churn'));
      for (let i = 0; i < 100; i++) await ns.resources.toolRuns.patchStatus('churn', { attempt: i + 1 });
      await expect
        .poll(async () => (await store.resources.eventsAfter('ToolRun', ns.name, 0, 1000)).events.length)
        .toBeLessThanOrEqual(50);
      await ns.resources.tools.create(tool('after-churn'));
      // Not 410 Gone: the watch moved its version on while the ToolRuns churned.
      expect(summary(await toolEvents)).toEqual(['ADDED after-churn']);
    });

    // A Postgres-only behaviour: defined for that driver alone, so the SQLite run reports no skipped test.

    if (driver === 'pg')
      it('wakes watchers in another process on the same database', async () => {
        const otherStore = await openStore(config());
        try {
          const local = open('remote');
          const remote = open('remote', {}, otherStore, local.name);
          const { resourceVersion } = await remote.resources.tools.list();
          const events: WatchEvent<WireObject>[] = [];
          const watching = collect(remote.resources.tools, { resourceVersion }, 1).then((seen) => {
            events.push(...(seen as WatchEvent<WireObject>[]));
          });
          // Let the remote watch go idle first, so only a notification can wake it.
          await new Promise((resolve) => setTimeout(resolve, 200));
          await local.resources.tools.create(tool('from-elsewhere'));
          await watching;
          expect(summary(events)).toEqual(['ADDED from-elsewhere']);
        } finally {
          await otherStore.close();
        }
      });
  });
});
