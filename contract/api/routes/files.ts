/** The Files route: a file artifact through its presigned URL. */
import { z } from 'zod';
import { failure, notFound } from './shared.ts';
import type { RouteSpec } from './spec.ts';

/** The Files operation. */
export const FILE_ROUTES = [
  {
    method: 'GET',
    path: '/files/{runId}/{fileKey}',
    operationId: 'downloadFile',
    summary: 'Download a file artifact through its presigned URL (no API key)',
    tag: 'Files',
    public: true,
    // Other parameters are ignored: only the signed ones count.
    query: z.object({ expires: z.string().optional(), signature: z.string().optional() }),
    responses: {
      200: { description: 'The file', contentType: 'application/octet-stream' },
      403: failure('The link expired or was altered'),
      404: notFound,
    },
  },
] as const satisfies readonly RouteSpec[];
