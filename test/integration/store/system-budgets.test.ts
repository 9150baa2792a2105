/**
 * Rate budgets of systems in the store (store/queries/system-budgets.ts), on SQLite and Postgres: a take
 * answers when its request may go (spaced at the rate after the burst), a pause holds every later take,
 * maxConcurrent counts leases until they are released or expire, and nothing is reserved past a deadline.
 */
import { expect, it } from 'vitest';
import { describeStore } from '../../support/store.ts';

const FAR = Number.MAX_SAFE_INTEGER;
let serial = 0;
const lease = () => `lease-${++serial}`;

describeStore('system budgets', (store) => {
  const budgets = () => store.systemBudgets;

  it('spaces requests at the rate once the burst is used, and counts the waits', async () => {
    const limit = { requestsPerSecond: 10, burst: 2 };
    const now = 1_000_000;
    const ats = [];
    for (let i = 0; i < 4; i++) {
      const take = await budgets().take({ key: 'rate', limit, now, deadline: FAR, leaseId: lease() });
      expect(take.granted).toBe(true);
      ats.push(take.at);
    }
    expect(ats).toEqual([now, now, now + 100, now + 200]);
    expect(await budgets().use('rate', limit, now)).toMatchObject({
      requests: 4,
      waits: 2,
      waitMs: 300,
      backlogMs: 300,
    });
  });

  it('a pause holds every later take until it ends; the later of two pauses wins', async () => {
    const limit = { requestsPerSecond: 1000 };
    const now = 2_000_000;
    await budgets().pause('paused', now + 5_000);
    await budgets().pause('paused', now + 1_000);
    const take = await budgets().take({ key: 'paused', limit, now, deadline: FAR, leaseId: lease() });
    expect(take).toEqual({ granted: true, at: now + 5_000 });
    expect(await budgets().use('paused', limit, now)).toMatchObject({
      throttled: 2,
      pausedUntil: now + 5_000,
    });
  });

  it('reserves nothing for a request that could not go before its deadline', async () => {
    const limit = { requestsPerSecond: 1 };
    const now = 3_000_000;
    await budgets().take({ key: 'deadline', limit, now, deadline: FAR, leaseId: lease() });
    const late = await budgets().take({ key: 'deadline', limit, now, deadline: now + 500, leaseId: lease() });
    expect(late).toEqual({ granted: false, reason: 'deadline', at: now + 1_000 });
    const next = await budgets().take({ key: 'deadline', limit, now, deadline: FAR, leaseId: lease() });
    expect(next).toEqual({ granted: true, at: now + 1_000 });
  });

  it('maxConcurrent: a take finds every slot held until one is released or its lease expires', async () => {
    const limit = { maxConcurrent: 2 };
    const now = 4_000_000;
    const first = await budgets().take({
      key: 'slots',
      limit,
      now,
      deadline: now + 60_000,
      leaseId: lease(),
    });
    const second = await budgets().take({
      key: 'slots',
      limit,
      now,
      deadline: now + 30_000,
      leaseId: lease(),
    });
    expect([first.granted, second.granted]).toEqual([true, true]);
    const full = await budgets().take({ key: 'slots', limit, now, deadline: FAR, leaseId: lease() });
    expect(full).toEqual({ granted: false, reason: 'concurrency', at: now + 30_000 });
    expect(await budgets().use('slots', limit, now)).toMatchObject({ inFlight: 2 });

    if (!first.granted || first.lease === undefined) throw new Error('no lease');
    await budgets().release('slots', first.lease);
    expect(
      (await budgets().take({ key: 'slots', limit, now, deadline: FAR, leaseId: lease() })).granted,
    ).toBe(true);
    // The second lease expires at its deadline: a process that died holding it leaks no slot.
    const later = now + 30_000;
    expect(
      (await budgets().take({ key: 'slots', limit, now: later, deadline: FAR, leaseId: lease() })).granted,
    ).toBe(true);
  });

  it('concurrent takes of one budget each get their own time', async () => {
    const limit = { requestsPerSecond: 100 };
    const now = 5_000_000;
    const takes = await Promise.all(
      Array.from({ length: 20 }, () =>
        budgets().take({ key: 'concurrent', limit, now, deadline: FAR, leaseId: lease() }),
      ),
    );
    const ats = takes.map((take) => take.at).sort((a, b) => a - b);
    expect(ats).toEqual(Array.from({ length: 20 }, (_, i) => now + i * 10));
  });
});
