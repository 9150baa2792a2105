import { expect, it } from 'vitest';
import type { ResourceChange } from '../../../store/index.ts';
import { describeStore } from '../../support/store.ts';

/** Resolves on the next call of the returned listener. */
function nextCall(): { listener: () => void; called: Promise<void> } {
  let resolve: () => void = () => {};
  const called = new Promise<void>((done) => {
    resolve = done;
  });
  return { listener: () => resolve(), called };
}

describeStore('notifications', (store, driver) => {
  it('delivers cancels and run events to every listener, in the order they were published', async () => {
    const cancels: string[][] = [[], []];
    const events: string[] = [];
    const stops = await Promise.all([
      store.onCancel((runId) => cancels[0]!.push(runId)),
      store.onCancel((runId) => cancels[1]!.push(runId)),
      store.onRunEvent((payload) => events.push(payload)),
    ]);
    try {
      await store.publishCancel('run-1');
      await store.publishRunEvent('{"n":1}');
      await store.publishCancel('run-2');
      await store.publishRunEvent('{"n":2}');
      await expect
        .poll(() => cancels, { timeout: 5000 })
        .toEqual([
          ['run-1', 'run-2'],
          ['run-1', 'run-2'],
        ]);
      await expect.poll(() => events, { timeout: 5000 }).toEqual(['{"n":1}', '{"n":2}']);
    } finally {
      for (const stop of stops) await stop();
    }
  });

  it('stops delivering to a listener once it unsubscribes', async () => {
    const heard: string[] = [];
    const stop = await store.onCancel((runId) => heard.push(runId));
    const marker = nextCall();
    const stopMarker = await store.onRunEvent(marker.listener);
    await stop();
    await store.publishCancel('after-stop');
    await store.publishRunEvent('marker');
    await marker.called;
    await stopMarker();
    expect(heard).toEqual([]);
  });

  /** Counts the wakes of an onOutbox listener; `woken` resolves on the first. */
  async function outboxWakes() {
    let wakes = 0;
    const first = nextCall();
    const stop = await store.onOutbox(() => {
      wakes++;
      first.listener();
    });
    return { count: () => wakes, woken: first.called, stop };
  }

  it('wakes outbox listeners when the enqueuing transaction commits, not before', async () => {
    const wakes = await outboxWakes();
    try {
      await store.transaction(async (tx) => {
        await tx.enqueueOutbox([{ kind: 'notify', payload: {} }]);
        // Round trips inside the transaction give an early notification every chance to arrive.
        await tx.outboxBacklog();
        await new Promise((resolve) => setTimeout(resolve, 20));
        await tx.outboxBacklog();
        expect(wakes.count()).toBe(0);
      });
      await wakes.woken;
      expect(wakes.count()).toBe(1);
    } finally {
      await wakes.stop();
    }
  });

  it('never wakes outbox listeners for a transaction that rolls back', async () => {
    const wakes = await outboxWakes();
    try {
      await expect(
        store.transaction(async (tx) => {
          await tx.enqueueOutbox([{ kind: 'notify', payload: {} }]);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      // A later commit's wake arrives after anything the rolled back transaction could have sent.
      await store.transaction((tx) => tx.enqueueOutbox([{ kind: 'notify', payload: {} }]));
      await wakes.woken;
      expect(wakes.count()).toBe(1);
    } finally {
      await wakes.stop();
    }
  });

  it('wakes resource listeners after a committed write only, saying its revision and kinds', async () => {
    const changes: (ResourceChange | undefined)[] = [];
    const woken = nextCall();
    const stop = await store.resources.onChange((change) => {
      changes.push(change);
      woken.listener();
    });
    const key = { kind: 'Tool', namespace: 'default', name: `notified-${driver}` };
    const record = (revision: number) => ({
      ...key,
      uid: `uid-${driver}-${revision}`,
      resourceVersion: revision,
      generation: 1,
      ownerUids: [],
      object: { metadata: { name: key.name } },
    });
    try {
      await expect(
        store.resources.write(async (writer) => {
          await writer.put(record(await writer.nextRevision()), 'ADDED');
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      const committed = await store.resources.write(async (writer) => {
        const revision = await writer.nextRevision();
        await writer.put(record(revision), 'ADDED');
        return revision;
      });
      await woken.called;
      expect(changes).toEqual([{ revision: committed, kinds: new Set(['Tool']) }]);
    } finally {
      await stop();
    }
  });
});
