/**
 * The tunnels of every API replica, through the store (migration 11): a replica records the tunnels its
 * agents register, with the address of its gateway relay, and refreshes them while they stay connected.
 * A run on another replica finds the holder here and its relay forwards the stream there; the listing on
 * any replica shows the holder's name and the counters it wrote with its last refresh. When another
 * replica takes a tunnel over (a newer agent connection with the same id), this replica sees it on its
 * next refresh and lets its own agent go, as one replica does with an older connection.
 */
import { type AdvertisedTarget, CLOSE } from '../../contract/wire/tunnel.ts';
import type { GatewayTunnelQueries, GatewayTunnelRow } from '../../store/index.ts';
import type { GatewayRegistry } from './registry.ts';

export interface GatewayDirectoryOptions {
  tunnels: GatewayTunnelQueries;
  /** This replica's id in the directory. */
  holderId: string;
  /** This replica's name for people (its Pod name), shown with the tunnels it holds. */
  replica: string;
  /** host:port where the other replicas reach this replica's relay. */
  relayAddress: string;
  heartbeatMs: number;
  log(line: string): void;
  now?: () => number;
}

export class GatewayDirectory {
  readonly #options: GatewayDirectoryOptions;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #writes: Promise<void> = Promise.resolve();

  constructor(options: GatewayDirectoryOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  get holderId(): string {
    return this.#options.holderId;
  }

  /** A row outlives three missed heartbeats, no more. */
  get #leaseMs(): number {
    return this.#options.heartbeatMs * 3;
  }

  /** Follows the registry's registrations and refreshes them until `stop`. */
  follow(registry: GatewayRegistry): void {
    registry.listen({
      registered: (tunnelId, targets) => this.#enqueue(() => this.#claim(tunnelId, targets)),
      unregistered: (tunnelId) =>
        this.#enqueue(() => this.#options.tunnels.release(tunnelId, this.#options.holderId)),
    });
    this.#timer = setInterval(() => this.#enqueue(() => this.#refresh(registry)), this.#options.heartbeatMs);
    this.#timer.unref();
  }

  /** The live row of a tunnel another replica holds (undefined when none does). */
  async remote(tunnelId: string): Promise<GatewayTunnelRow | undefined> {
    const row = await this.#options.tunnels.find(tunnelId, this.#now());
    return row && row.holderId !== this.#options.holderId ? row : undefined;
  }

  /** Tunnels held by the other replicas, for the listing. */
  async others(): Promise<GatewayTunnelRow[]> {
    return (await this.#options.tunnels.list(this.#now())).filter(
      (row) => row.holderId !== this.#options.holderId,
    );
  }

  /** Stops refreshing and gives this replica's rows up (its agents reconnect elsewhere). */
  async stop(registry: GatewayRegistry): Promise<void> {
    clearInterval(this.#timer);
    const ids = registry.tunnelIds();
    this.#enqueue(async () => {
      for (const id of ids) await this.#options.tunnels.release(id, this.#options.holderId);
    });
    await this.#writes;
  }

  /** Writes in order (a release never overtakes its claim); a failed write is logged, never thrown. */
  #enqueue(write: () => Promise<void>): void {
    this.#writes = this.#writes.then(write).catch((error: unknown) => {
      this.#options.log(`gateway directory: ${(error as Error).message}`);
    });
  }

  async #claim(tunnelId: string, targets: AdvertisedTarget[]): Promise<void> {
    const now = this.#now();
    await this.#options.tunnels.claim({
      tunnelId,
      holderId: this.#options.holderId,
      replica: this.#options.replica,
      relayAddress: this.#options.relayAddress,
      targets: JSON.stringify(targets),
      connectedAt: now,
      expiresAt: now + this.#leaseMs,
    });
  }

  async #refresh(registry: GatewayRegistry): Promise<void> {
    const now = this.#now();
    const expiresAt = now + this.#leaseMs;
    for (const tunnelId of registry.tunnelIds()) {
      const live = registry.get(tunnelId);
      if (!live) continue;
      const { bytesIn, bytesOut, streamsOpen, streamsOpened } = live;
      const counters = { bytesIn, bytesOut, streamsOpen, streamsOpened, countersAt: now };
      if (await this.#options.tunnels.refresh(tunnelId, this.#options.holderId, expiresAt, counters))
        continue;
      this.#options.log(`gateway ${tunnelId}: taken over by another replica; closing this replica's agent`);
      registry.evict(tunnelId, CLOSE.replaced, 'replaced by an agent connection on another replica');
    }
  }
}
