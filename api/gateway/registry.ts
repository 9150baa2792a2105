/**
 * The live tunnels of this API process: one registration per tunnel id (a newer agent replaces the
 * older), streams opened through them with a wait for a reconnecting agent, an open timeout and a
 * per-tunnel stream limit. Runs reach it through the relay (relay.ts); the listing and metrics read it.
 */
import type { Duplex } from 'node:stream';
import { type ApiSettings, SETTINGS } from '../../config/config.ts';
import type { AdvertisedTarget } from '../../contract/wire/tunnel.ts';
import type { TunnelMux } from '../../contract/wire/tunnel-mux.ts';

/** KUBEGLUE_GATEWAY_CONNECT_WAIT_MS, _OPEN_TIMEOUT_MS and _STREAM_LIMIT (config/gateway.ts). */
export type GatewaySettings = ApiSettings['gateway'];

/** What a registration hands the registry. */
export interface TunnelConnection {
  tunnelId: string;
  targets: AdvertisedTarget[];
  mux: TunnelMux;
  /** The API key that registered it (its id, never the secret). */
  keyId: string;
  /** Closes the agent's WebSocket with a close code the agent acts on. */
  close(code: number, reason: string): void;
}

interface LiveTunnel extends TunnelConnection {
  connectedAt: string;
  streamsOpened: number;
}

export interface RegistryListener {
  registered(tunnelId: string, targets: AdvertisedTarget[]): void;
  unregistered(tunnelId: string): void;
}

/** One tunnel as `GET /v1/gateways` shows it. */
export interface GatewayInfo {
  tunnelId: string;
  connected: boolean;
  connectedSince: string;
  targets: AdvertisedTarget[];
  streamsOpen: number;
  streamsOpened: number;
  bytesIn: number;
  bytesOut: number;
  /** Whether the agent is connected to this replica (the counters are the holder's). */
  heldHere: boolean;
}

/** Why a stream could not be opened; the message becomes the step's error. */
export class GatewayStreamError extends Error {
  override name = 'GatewayStreamError';
}

export class GatewayRegistry {
  readonly settings: GatewaySettings;
  readonly #tunnels = new Map<string, LiveTunnel>();
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #now: () => Date;
  readonly #listeners: RegistryListener[] = [];

  constructor(settings: GatewaySettings, now: () => Date = () => new Date()) {
    this.settings = settings;
    this.#now = now;
  }

  /** Told of every registration and unregistration (the store's directory of tunnels follows them). */
  listen(listener: RegistryListener): void {
    this.#listeners.push(listener);
  }

  /** Whether this process holds the tunnel now. */
  holds(tunnelId: string): boolean {
    return this.#tunnels.has(tunnelId);
  }

  /** Ids of the tunnels this process holds. */
  tunnelIds(): string[] {
    return [...this.#tunnels.keys()];
  }

  /** Lets the tunnel's agent go (another replica holds the tunnel now): its connection is closed. */
  evict(tunnelId: string, code: number, reason: string): void {
    const live = this.#tunnels.get(tunnelId);
    if (!live) return;
    this.#tunnels.delete(tunnelId);
    live.close(code, reason);
  }

  /** Makes `connection` the tunnel's live registration; returns the one it replaced, if any. */
  register(connection: TunnelConnection): TunnelConnection | undefined {
    const previous = this.#tunnels.get(connection.tunnelId);
    this.#tunnels.set(connection.tunnelId, {
      ...connection,
      connectedAt: this.#now().toISOString(),
      streamsOpened: 0,
    });
    const waiters = this.#waiters.get(connection.tunnelId);
    this.#waiters.delete(connection.tunnelId);
    for (const wake of waiters ?? []) wake();
    for (const listener of this.#listeners) listener.registered(connection.tunnelId, connection.targets);
    return previous;
  }

  /** The agent's connection closed; a newer registration of the same id is left alone. */
  unregister(connection: TunnelConnection): void {
    const live = this.#tunnels.get(connection.tunnelId);
    if (live && live.mux === connection.mux) {
      this.#tunnels.delete(connection.tunnelId);
      for (const listener of this.#listeners) listener.unregistered(connection.tunnelId);
    }
  }

  list(): GatewayInfo[] {
    return [...this.#tunnels.values()]
      .sort((a, b) => (a.tunnelId < b.tunnelId ? -1 : a.tunnelId > b.tunnelId ? 1 : 0))
      .map((tunnel) => this.#info(tunnel));
  }

  get(tunnelId: string): GatewayInfo | undefined {
    const tunnel = this.#tunnels.get(tunnelId);
    return tunnel && this.#info(tunnel);
  }

  #info(tunnel: LiveTunnel): GatewayInfo {
    return {
      tunnelId: tunnel.tunnelId,
      connected: true,
      connectedSince: tunnel.connectedAt,
      targets: tunnel.targets,
      streamsOpen: tunnel.mux.streamCount,
      streamsOpened: tunnel.streamsOpened,
      bytesIn: tunnel.mux.bytesIn,
      bytesOut: tunnel.mux.bytesOut,
      heldHere: true,
    };
  }

  /**
   * A byte stream to `target` behind the tunnel. Waits up to connectWaitMs for a tunnel that is not
   * connected (or the signal), then fails with "gateway <id> is not connected": a run never hangs on it.
   */
  async openStream(
    tunnelId: string,
    target: string,
    signal?: AbortSignal,
    dataPort?: number,
  ): Promise<Duplex> {
    const tunnel = this.#tunnels.get(tunnelId) ?? (await this.#waitFor(tunnelId, signal));
    if (!tunnel) throw new GatewayStreamError(`gateway ${tunnelId} is not connected`);
    if (!tunnel.targets.some((known) => known.name === target)) {
      throw new GatewayStreamError(
        `gateway ${tunnelId} has no target '${target}' (its targets: ${tunnel.targets.map((t) => t.name).join(', ')})`,
      );
    }
    if (tunnel.mux.streamCount >= this.settings.streamLimit) {
      throw new GatewayStreamError(
        `gateway ${tunnelId} has ${this.settings.streamLimit} streams open, its limit (${SETTINGS.tree.gateway.streamLimit.name})`,
      );
    }
    tunnel.streamsOpened += 1;
    try {
      return await tunnel.mux.open(target, this.settings.openTimeoutMs, dataPort);
    } catch (error) {
      throw new GatewayStreamError(`gateway ${tunnelId}: ${(error as Error).message}`);
    }
  }

  #waitFor(tunnelId: string, signal: AbortSignal | undefined): Promise<LiveTunnel | undefined> {
    return new Promise((resolve) => {
      let waiters = this.#waiters.get(tunnelId);
      if (!waiters) {
        waiters = new Set();
        this.#waiters.set(tunnelId, waiters);
      }
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        waiters.delete(done);
        resolve(this.#tunnels.get(tunnelId));
      };
      const timer = setTimeout(done, this.settings.connectWaitMs);
      signal?.addEventListener('abort', done, { once: true });
      waiters.add(done);
    });
  }

  /** Shutdown: every agent is told to go away (it reconnects, to another replica if there is one). */
  closeAll(code: number, reason: string): void {
    for (const tunnel of this.#tunnels.values()) tunnel.close(code, reason);
    this.#tunnels.clear();
  }
}
