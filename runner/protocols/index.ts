import type { Protocols } from '../engine/types.ts';
import { executeFtpStep } from './ftp.ts';
import { type HttpClientOptions, httpRequest } from './http.ts';
import { executePostgresStep } from './postgres.ts';
import { executeSftpStep } from './sftp.ts';
import { traceparentFor } from './traceparent.ts';

/** The real outbound side of the engine: undici, pg, basic-ftp and ssh2-sftp-client. */
export function createProtocols(http: HttpClientOptions = {}): Protocols {
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
        },
        http,
      );
    },
    postgres: (call, ctx) => executePostgresStep({ ...call, signal: ctx.signal, deadline: ctx.deadline }),
    ftp: (call, ctx) => executeFtpStep({ ...call, signal: ctx.signal, deadline: ctx.deadline }),
    sftp: (call, ctx) => executeSftpStep({ ...call, signal: ctx.signal, deadline: ctx.deadline }),
  };
}
