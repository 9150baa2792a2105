import type { JsonValue } from '../../contract/json.ts';
import type { ConnectionProtocol } from '../../contract/step-protocols.ts';
import { type ConnectionCall, type ConnectionStep, connectionSteps, type Protocols } from '../types.ts';
import { EgressGuard, type EgressPolicy, PERMISSIVE_EGRESS } from './egress-policy.ts';
import { type GatewayDial, type GatewayRelayAddress, gatewayDial } from './gateway-socket.ts';
import { type HttpClientOptions, httpRequest } from './http.ts';
import { traceparentFor } from './traceparent.ts';

export interface ProtocolOptions {
  /** Which addresses steps may reach; default: everything but the cloud metadata addresses. */
  egress?: EgressPolicy;
  http?: HttpClientOptions;
  /** The API's gateway relay: how steps on private systems reach their gateway (pool workers). */
  gatewayRelay?: GatewayRelayAddress | undefined;
}

/** How a connection step reaches its server: through its gateway, or past the egress guard, within the run's bounds. */
export interface ConnectionBounds {
  gateway?: GatewayDial;
  signal: AbortSignal;
  deadline: number;
  egress: EgressGuard;
  /** The step data bound: a protocol that streams its answer fails past it instead of holding it all. */
  maxDataBytes?: number | undefined;
}

/** What a connection protocol's module gives: its step, and how to end the connections it keeps open. */
interface ConnectionModule {
  step(request: Omit<ConnectionCall, 'allowedNetworks' | 'gateway'> & ConnectionBounds): Promise<JsonValue>;
  closePools?(): Promise<void>;
}

// Every client but HTTP's (pg, basic-ftp, ssh2, …) loads on a process's first step of its kind: most
// engine workers only ever run HTTP steps, and each client costs megabytes resident.
const CONNECTION_MODULES: { [P in ConnectionProtocol]: () => Promise<ConnectionModule> } = {
  postgres: () =>
    import('./postgres.ts').then((module) => ({
      step: module.executePostgresStep,
      closePools: module.closePostgresPools,
    })),
  ftp: () => import('./ftp.ts').then((module) => ({ step: module.executeFtpStep })),
  sftp: () => import('./sftp.ts').then((module) => ({ step: module.executeSftpStep })),
  redis: () =>
    import('./redis.ts').then((module) => ({
      step: module.executeRedisStep,
      closePools: module.closeRedisPools,
    })),
  mysql: () =>
    import('./mysql.ts').then((module) => ({
      step: module.executeMysqlStep,
      closePools: module.closeMysqlPools,
    })),
  smb: () => import('./smb.ts').then((module) => ({ step: module.executeSmbStep })),
};

/** The modules loaded in this process so far (contract/step-protocols.ts lists the protocols). */
const loaded = new Map<ConnectionProtocol, Promise<ConnectionModule>>();
function connectionModule(protocol: ConnectionProtocol): Promise<ConnectionModule> {
  let module = loaded.get(protocol);
  if (!module) {
    module = CONNECTION_MODULES[protocol]();
    loaded.set(protocol, module);
  }
  return module;
}

/** Ends the pooled connections of every protocol that ran a step in this process (Postgres, …). */
export async function closeConnectionPools(): Promise<void> {
  await Promise.all([...loaded.values()].map(async (module) => (await module).closePools?.()));
}

/** The real outbound side of the engine: undici for HTTP, and the connection protocols' modules. */
export function createProtocols(options: ProtocolOptions = {}): Protocols {
  const egress = options.egress ?? PERMISSIVE_EGRESS;
  const guard = new EgressGuard(egress);
  const relay = options.gatewayRelay;
  const http: HttpClientOptions = { ...options.http, egress, gatewayRelay: relay };
  const connectionStep =
    (protocol: ConnectionProtocol): ConnectionStep =>
    async ({ allowedNetworks, gateway, ...call }, ctx) => {
      const { step } = await connectionModule(protocol);
      // One step call is one request to the system's budget (its queries, transfers or commands).
      const release = await ctx.budget?.take(ctx.signal, ctx.deadline);
      try {
        return await step({
          ...call,
          ...(gateway ? { gateway: gatewayDial(relay, gateway) } : {}),
          signal: ctx.signal,
          deadline: ctx.deadline,
          egress: guard.withAllow(allowedNetworks),
          ...(ctx.maxDataBytes !== undefined ? { maxDataBytes: ctx.maxDataBytes } : {}),
        });
      } finally {
        release?.();
      }
    };
  return {
    async http(call, ctx) {
      const { retry, ...rest } = call;
      return httpRequest(
        {
          ...rest,
          signal: ctx.signal,
          deadline: ctx.deadline,
          retry: { enabled: retry },
          traceparent: traceparentFor(ctx.traceId, ctx.spanId),
          redact: ctx.redact,
          onRetry: ctx.onRetry,
          budget: ctx.budget,
        },
        http,
      );
    },
    ...connectionSteps(connectionStep),
  };
}
