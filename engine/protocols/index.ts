import type { FileCall, ProtocolContext, Protocols } from '../types.ts';
import { EgressGuard, type EgressPolicy, PERMISSIVE_EGRESS } from './egress-policy.ts';
import { type GatewayRelayAddress, gatewayDial } from './gateway-socket.ts';
import { type HttpClientOptions, httpRequest } from './http.ts';
import { traceparentFor } from './traceparent.ts';

export interface ProtocolOptions {
  /** Which addresses steps may reach; default: everything but the cloud metadata addresses. */
  egress?: EgressPolicy;
  http?: HttpClientOptions;
  /** The API's gateway relay: how steps on private systems reach their gateway (pool workers). */
  gatewayRelay?: GatewayRelayAddress | undefined;
}

// Postgres, FTP and SFTP clients (pg, basic-ftp, ssh2) load on a process's first step of their kind:
// most engine workers only ever run HTTP steps, and each client costs megabytes resident.
let postgresModule: Promise<typeof import('./postgres.ts')> | undefined;
const loadPostgres = () => {
  postgresModule ??= import('./postgres.ts');
  return postgresModule;
};
const loadFtp = () => import('./ftp.ts');
const loadSftp = () => import('./sftp.ts');

/** Ends the Postgres pools of this process, if a Postgres step ever ran here. */
export async function closePostgresPools(): Promise<void> {
  if (postgresModule) await (await postgresModule).closePostgresPools();
}

/** The real outbound side of the engine: undici, pg, basic-ftp and ssh2-sftp-client. */
export function createProtocols(options: ProtocolOptions = {}): Protocols {
  const egress = options.egress ?? PERMISSIVE_EGRESS;
  const guard = new EgressGuard(egress);
  const relay = options.gatewayRelay;
  const http: HttpClientOptions = { ...options.http, egress, gatewayRelay: relay };
  /** How a Postgres, FTP or SFTP step connects (through its gateway, or past the egress guard) and when it stops. */
  const connection = (
    { allowedNetworks, gateway }: Pick<FileCall, 'allowedNetworks' | 'gateway'>,
    ctx: ProtocolContext,
  ) => ({
    ...(gateway ? { gateway: gatewayDial(relay, gateway) } : {}),
    signal: ctx.signal,
    deadline: ctx.deadline,
    egress: guard.withAllow(allowedNetworks),
  });
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
      loadPostgres().then(({ executePostgresStep }) =>
        executePostgresStep({ ...call, ...connection({ allowedNetworks, gateway }, ctx) }),
      ),
    ftp: ({ allowedNetworks, gateway, ...call }, ctx) =>
      loadFtp().then(({ executeFtpStep }) =>
        executeFtpStep({ ...call, ...connection({ allowedNetworks, gateway }, ctx) }),
      ),
    sftp: ({ allowedNetworks, gateway, ...call }, ctx) =>
      loadSftp().then(({ executeSftpStep }) =>
        executeSftpStep({ ...call, ...connection({ allowedNetworks, gateway }, ctx) }),
      ),
  };
}
