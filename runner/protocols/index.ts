import type { Protocols } from '../engine/types.ts';
import { EgressGuard, type EgressPolicy, PERMISSIVE_EGRESS } from './egress-policy.ts';
import { executeFtpStep } from './ftp.ts';
import { type HttpClientOptions, httpRequest } from './http.ts';
import { executePostgresStep } from './postgres.ts';
import { executeSftpStep } from './sftp.ts';
import { traceparentFor } from './traceparent.ts';

export interface ProtocolOptions {
  /** Which addresses steps may reach; default: everything but the cloud metadata addresses. */
  egress?: EgressPolicy;
  http?: HttpClientOptions;
}

/** The real outbound side of the engine: undici, pg, basic-ftp and ssh2-sftp-client. */
export function createProtocols(options: ProtocolOptions = {}): Protocols {
  const egress = options.egress ?? PERMISSIVE_EGRESS;
  const guard = new EgressGuard(egress);
  const http: HttpClientOptions = { ...options.http, egress };
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
    postgres: ({ allowedNetworks, ...call }, ctx) =>
      executePostgresStep({
        ...call,
        signal: ctx.signal,
        deadline: ctx.deadline,
        egress: guard.withAllow(allowedNetworks),
      }),
    ftp: ({ allowedNetworks, ...call }, ctx) =>
      executeFtpStep({
        ...call,
        signal: ctx.signal,
        deadline: ctx.deadline,
        egress: guard.withAllow(allowedNetworks),
      }),
    sftp: ({ allowedNetworks, ...call }, ctx) =>
      executeSftpStep({
        ...call,
        signal: ctx.signal,
        deadline: ctx.deadline,
        egress: guard.withAllow(allowedNetworks),
      }),
  };
}
