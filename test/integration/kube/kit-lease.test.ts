import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { LeaderElector } from '../../../kube/lease.ts';
import {
  createClusterResources,
  createEmbeddedResources,
  LEASE_KIND,
  type ResourceClient,
} from '../../../kube/resources/index.ts';
import { type Lease, microTime } from '../../../kube/types.ts';
import { describeKube, useKubeTestBed } from '../../support/kube/provided.ts';
import { useTestStore } from '../../support/store.ts';

/** Short enough for a test, in client-go's proportions: renew deadline < lease duration, retry ≪ both. */
const TIMING = { leaseDurationMs: 3_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 };

/** A client that can be cut off (calls fail) or hung (calls never answer), like a partitioned leader. */
function severable(client: ResourceClient<Lease>) {
  let cut: 'no' | 'fail' | 'hang' = 'no';
  const guard =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A) => {
      if (cut === 'fail') throw new Error('partitioned');
      if (cut === 'hang') return new Promise<R>(() => {});
      return fn(...args);
    };
  const wrapped = {
    get: guard((name: string) => client.get(name)),
    create: guard((lease: Lease) => client.create(lease)),
    update: guard((lease: Lease) => client.update(lease)),
  } as unknown as ResourceClient<Lease>;
  return {
    client: wrapped,
    sever: () => {
      cut = 'fail';
    },
    hang: () => {
      cut = 'hang';
    },
  };
}

interface Timeline {
  events: string[];
  at: Map<string, number>;
}

function elector(name: string, identity: string, leases: ResourceClient<Lease>, timeline: Timeline) {
  const record = (what: string) => {
    timeline.events.push(`${identity} ${what}`);
    timeline.at.set(`${identity} ${what}`, Date.now());
  };
  return new LeaderElector({
    leases,
    name,
    identity,
    ...TIMING,
    onStartedLeading: () => record('started'),
    onStoppedLeading: (reason) => record(`stopped ${reason}`),
  });
}

function describeLeaderElection(implementation: string, leasesIn: () => Promise<ResourceClient<Lease>>) {
  describe(`leader election on ${implementation}`, () => {
    let leases: ResourceClient<Lease>;

    beforeAll(async () => {
      leases = await leasesIn();
    });

    /** a leads over a connection the test can cut or hang; b then tries too. */
    async function aLeadsThenBTries(prefix: string) {
      const name = `${prefix}-${randomUUID().slice(0, 8)}`;
      const timeline: Timeline = { events: [], at: new Map() };
      const first = severable(leases);
      const a = elector(name, 'a', first.client, timeline);
      const b = elector(name, 'b', leases, timeline);
      a.start();
      await expect.poll(() => a.isLeader, { timeout: 10_000 }).toBe(true);
      b.start();
      return { name, timeline, first, a, b };
    }

    it('elects exactly one; takes over within the lease duration after the leader dies, at once after a release', async () => {
      const { name, timeline, first, a, b } = await aLeadsThenBTries('lease');
      // b keeps trying (and watching a renew) without ever leading.
      await new Promise((resolve) => setTimeout(resolve, TIMING.leaseDurationMs));
      expect([a.isLeader, b.isLeader]).toEqual([true, false]);
      expect(b.leader).toBe('a');
      expect((await leases.get(name))?.spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 0 });

      // a stops abruptly: no release. It gives up after its renew deadline; b takes over once the lease lapsed.
      const severedAt = Date.now();
      first.sever();
      await expect.poll(() => b.isLeader, { timeout: 15_000, interval: 50 }).toBe(true);
      const takeoverMs = (timeline.at.get('b started') ?? 0) - severedAt;
      expect(timeline.events).toEqual(['a started', 'a stopped lost', 'b started']);
      expect(takeoverMs).toBeGreaterThan(TIMING.leaseDurationMs - 2 * TIMING.retryPeriodMs);
      expect(takeoverMs).toBeLessThan(3 * TIMING.leaseDurationMs);
      await a.done;
      expect((await leases.get(name))?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });

      // b stops cleanly: it releases, and c does not wait for the lease to lapse.
      const c = elector(name, 'c', leases, timeline);
      c.start();
      await new Promise((resolve) => setTimeout(resolve, 2 * TIMING.retryPeriodMs));
      expect(c.isLeader).toBe(false);
      const releasedAt = Date.now();
      await b.stop();
      await expect.poll(() => c.isLeader, { timeout: 15_000, interval: 20 }).toBe(true);
      expect(Date.now() - releasedAt).toBeLessThan(TIMING.leaseDurationMs);
      expect(timeline.events).toEqual([
        'a started',
        'a stopped lost',
        'b started',
        'b stopped released',
        'c started',
      ]);
      expect((await leases.get(name))?.spec).toMatchObject({ holderIdentity: 'c', leaseTransitions: 2 });
      await c.stop();
      expect((await leases.get(name))?.spec.holderIdentity).toBe('');
    }, 60_000);

    it('stops leading at the renew deadline when renewals hang, before anyone else can lead', async () => {
      const { timeline, first, a, b } = await aLeadsThenBTries('hung');
      first.hang();
      await expect.poll(() => b.isLeader, { timeout: 15_000, interval: 50 }).toBe(true);
      expect(timeline.events).toEqual(['a started', 'a stopped lost', 'b started']);
      await a.done;
      await b.stop();
    }, 30_000);

    it('judges expiry by its own clock, not the renewTime another host wrote', async () => {
      const name = `skewed-${randomUUID().slice(0, 8)}`;
      // A live holder whose clock runs an hour behind: its renewTime looks long expired.
      const hourAgo = () => microTime(new Date(Date.now() - 3_600_000));
      const created = await leases.create({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name },
        spec: {
          holderIdentity: 'slow-clock',
          leaseDurationSeconds: 3,
          renewTime: hourAgo(),
          acquireTime: hourAgo(),
        },
      });
      const timeline: Timeline = { events: [], at: new Map() };
      const candidate = elector(name, 'candidate', leases, timeline);
      candidate.start();
      // The holder keeps renewing (with its wrong clock); the candidate must not take over.
      let current = created;
      for (let i = 0; i < 8; i++) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        current = await leases.update({ ...current, spec: { ...current.spec, renewTime: hourAgo() } });
      }
      expect(candidate.isLeader).toBe(false);
      // It stops renewing: now the candidate takes over.
      await expect.poll(() => candidate.isLeader, { timeout: 15_000 }).toBe(true);
      await candidate.stop();
    }, 60_000);
  });
}

describe('on the embedded store', () => {
  const { store } = useTestStore('sqlite');
  describeLeaderElection(
    'the embedded store',
    async () =>
      createEmbeddedResources<{ leases: Lease }>(store.resources, {
        namespace: 'kubeglue',
        kinds: { leases: LEASE_KIND },
      }).leases,
  );
});

describeKube('on a real API server', () => {
  const bed = useKubeTestBed('kit-lease');
  describeLeaderElection(
    'a real API server',
    async () =>
      createClusterResources<{ leases: Lease }>(bed.transport, {
        namespace: bed.namespace.name,
        kinds: { leases: LEASE_KIND },
      }).leases,
  );
});
