import type { GatewayRoute, Protocols } from '../engine/types.ts';
import { EgressGuard, type EgressPolicy, PERMISSIVE_EGRESS } from './egress-policy.ts';
import { executeFtpStep } from './ftp.ts';
import { type GatewayRelayAddress, gatewayDial } from './gateway-socket.ts';
import { type HttpClientOptions, httpRequest } from './http.ts';
import { executePostgresStep } from './postgres.ts';
import { executeSftpStep } from './sftp.ts';
import { traceparentFor } from './traceparent.ts';

export interface ProtocolOptions {
  /** Which addresses steps may reach; default: everything but the cloud metadata addresses. */
  egress?: EgressPolicy;
  http?: HttpClientOptions;
  /** The API's gateway relay: how steps on private systems reach their gateway (pool workers). */
  gatewayRelay?: GatewayRelayAddress | undefined;
}

/** The real outbound side of the engine: undici, pg, basic-ftp and ssh2-sftp-client. */
export function createProtocols(options: ProtocolOptions = {}): Protocols {
  const egress = options.egress ?? PERMISSIVE_EGRESS;
  const guard = new EgressGuard(egress);
  const relay = options.gatewayRelay;
  const http: HttpClientOptions = { ...options.http, egress, gatewayRelay: relay };
  const dial = (route: GatewayRoute | undefined) => (route ? { gateway: gatewayDial(relay, route) } : {});
  return {
    async http(call, ctx) {
      const { retry, ...rest } = call;
      return httpRequest(
        {
          ...rest,
          signal: ctx.signal,
          deadline: ctx.deadline,
          retry: { enabled: retry },
          traceparent: traceparentFor(ctx.traceId),
          redact: ctx.redact,
          onRetry: ctx.onRetry,
        },
        http,
      );
    },
    postgres: ({ allowedNetworks, gateway, ...call }, ctx) =>
      executePostgresStep({
        ...call,
        ...dial(gateway),
        signal: ctx.signal,
        deadline: ctx.deadline,
        egress: guard.withAllow(allowedNetworks),
      }),
    ftp: ({ allowedNetworks, gateway, ...call }, ctx) =>
      executeFtpStep({
        ...call,
        ...dial(gateway),
        signal: ctx.signal,
        deadline: ctx.deadline,
        egress: guard.withAllow(allowedNetworks),
      }),
    sftp: ({ allowedNetworks, gateway, ...call }, ctx) =>
      executeSftpStep({
        ...call,
        ...dial(gateway),
        signal: ctx.signal,
        deadline: ctx.deadline,
        egress: guard.withAllow(allowedNetworks),
      }),
  };
}
