import { expect, it } from 'vitest';
import { describeStore } from '../../support/store.ts';

const row = (holderId: string, expiresAt: number) => ({
  tunnelId: 'corp-eu',
  holderId,
  replica: `api-${holderId}`,
  relayAddress: `${holderId}.internal:8082`,
  targets: '[{"name":"crm","protocol":"https"}]',
  connectedAt: 1_000,
  expiresAt,
});

const counters = (bytes: number, at: number) => ({
  bytesIn: bytes,
  bytesOut: bytes * 2,
  streamsOpen: 1,
  streamsOpened: 3,
  countersAt: at,
});

describeStore('the gateway tunnel directory', (store) => {
  it('names the replica holding a tunnel until its lease expires', async () => {
    await store.gatewayTunnels.claim(row('replica-a', 5_000));
    expect(await store.gatewayTunnels.find('corp-eu', 4_999)).toMatchObject({
      holderId: 'replica-a',
      replica: 'api-replica-a',
      relayAddress: 'replica-a.internal:8082',
      ...counters(0, 1_000),
      streamsOpen: 0,
      streamsOpened: 0,
    });
    expect(await store.gatewayTunnels.find('corp-eu', 5_000)).toBeUndefined();
    expect(await store.gatewayTunnels.refresh('corp-eu', 'replica-a', 9_000, counters(500, 8_000))).toBe(
      true,
    );
    expect(await store.gatewayTunnels.list(8_000)).toMatchObject([
      { tunnelId: 'corp-eu', replica: 'api-replica-a', ...counters(500, 8_000) },
    ]);
  });

  it('lets a newer holder take the tunnel over, with fresh counters: the older one can neither refresh nor release it', async () => {
    await store.gatewayTunnels.claim(row('replica-b', 20_000));
    expect(await store.gatewayTunnels.find('corp-eu', 10_000)).toMatchObject({
      replica: 'api-replica-b',
      bytesIn: 0,
      bytesOut: 0,
    });
    expect(await store.gatewayTunnels.refresh('corp-eu', 'replica-a', 30_000, counters(900, 9_000))).toBe(
      false,
    );
    await store.gatewayTunnels.release('corp-eu', 'replica-a');
    expect(await store.gatewayTunnels.find('corp-eu', 10_000)).toMatchObject({
      holderId: 'replica-b',
      bytesIn: 0,
    });
    await store.gatewayTunnels.release('corp-eu', 'replica-b');
    expect(await store.gatewayTunnels.find('corp-eu', 10_000)).toBeUndefined();
  });
});
