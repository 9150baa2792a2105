/** The Logs route: the live events of a run, or of the runs of a trace. */
import { LogStreamQuery, RunLogEvent } from '../run.ts';
import { badRequest, notFound } from './shared.ts';
import type { RouteSpec } from './spec.ts';

/** The Logs operation. */
export const LOG_ROUTES = [
  {
    method: 'GET',
    path: '/logs/stream',
    operationId: 'streamLogs',
    summary: 'Live events of a run, or of the runs of a trace (Server-Sent Events)',
    tag: 'Logs',
    scopes: ['runs:read'],
    query: LogStreamQuery,
    responses: {
      200: {
        description:
          'text/event-stream: one event per line pair (`id:` and `data:` with a RunLogEvent), `: ping` ' +
          'comments every 15 s; ends when the run ends',
        schema: RunLogEvent,
        contentType: 'text/event-stream',
      },
      204: { description: 'Reconnect (Last-Event-ID) after the final event: nothing more will come' },
      400: badRequest,
      404: notFound,
    },
  },
] as const satisfies readonly RouteSpec[];
