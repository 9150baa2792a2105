import { z } from 'zod';
import { pageLimit } from './paging.ts';
import { Run } from './run.ts';
import { System } from './system.ts';
import { Tool } from './tool.ts';

export const ErrorBody = z
  .object({
    error: z.object({
      message: z.string(),
      code: z
        .string()
        .describe(
          'Extension: stable error code (KG_ERR_…), one per condition; match on it, not on the message.',
        ),
    }),
  })
  .meta({ id: 'Error' });
export type ErrorBody = z.infer<typeof ErrorBody>;

export function listEnvelope<T extends z.ZodType>(item: T) {
  return z.object({
    data: z.array(item),
    page: z.number().int(),
    limit: z.number().int(),
    total: z.number().int(),
    hasMore: z.boolean(),
  });
}

export const RunList = listEnvelope(Run)
  .extend({
    nextCursor: z
      .string()
      .nullable()
      .describe('Extension: pass as ?cursor= for the next page (keyset paging); null on the last page.'),
  })
  .meta({ id: 'RunList' });
export const ToolList = listEnvelope(Tool).meta({ id: 'ToolList' });
export const SystemList = listEnvelope(System).meta({ id: 'SystemList' });

export const DeleteResult = z.object({ success: z.boolean() }).meta({ id: 'DeleteResult' });

export const SystemDeleteResult = DeleteResult.extend({
  brokenTools: z
    .array(z.string())
    .optional()
    .describe('With force=true: the tools that still use the deleted system (they can no longer run).'),
}).meta({ id: 'SystemDeleteResult' });

export const TOOLS_PAGE_LIMIT_MAX = 100;

/** Query of `GET /v1/tools` (not shown by the interface). */
export const ListToolsQuery = z.strictObject({
  page: z.coerce.number().int().min(1).default(1),
  limit: pageLimit(50, TOOLS_PAGE_LIMIT_MAX),
  includeArchived: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  folder: z.string().optional(),
  token: z.string().optional(),
});

export const ApiKeyCreateBody = z
  .strictObject({
    name: z.string().min(1).max(128),
    toolIds: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe('Restrict the key to these tools (and their runs).'),
    admin: z.boolean().default(false).describe('Admin keys may manage API keys.'),
    hostGateways: z
      .boolean()
      .default(false)
      .describe(
        'May connect gateway agents (register tunnels) without being an admin key; admin keys always may.',
      ),
  })
  .meta({ id: 'ApiKeyCreateBody' });

export const ApiKey = z
  .object({
    id: z.string(),
    name: z.string(),
    toolIds: z.array(z.string()).nullable(),
    admin: z.boolean(),
    hostGateways: z.boolean().describe('May connect gateway agents (admin keys always may).'),
    createdAt: z.iso.datetime({ offset: true }),
    lastUsedAt: z.iso.datetime({ offset: true }).nullable(),
  })
  .meta({ id: 'ApiKey' });

export const ApiKeyCreated = ApiKey.extend({
  key: z.string().describe('The secret; shown only in this response.'),
}).meta({ id: 'ApiKeyCreated' });

export const ApiKeyList = z.object({ data: z.array(ApiKey) }).meta({ id: 'ApiKeyList' });

/** `GET /v1/me`: the calling API key (never the key itself). */
export const Me = z
  .object({
    id: z.string().describe("The key's id (runs started with it carry it as userId)."),
    name: z.string(),
    admin: z.boolean(),
    toolIds: z.array(z.string()).nullable().describe('The tools the key is limited to; null: every tool.'),
    userId: z.string().describe("The same id, under the name superglue's clients show (sg whoami)."),
    roleIds: z
      .array(z.enum(['admin', 'member']))
      .describe("superglue's base role, for its clients: admin for admin keys, else member."),
  })
  .meta({ id: 'Me' });
export type Me = z.infer<typeof Me>;

/** One connected gateway agent (`GET /v1/gateways`); never the agent's key or its targets' addresses. */
export const Gateway = z
  .object({
    tunnelId: z.string(),
    connected: z.boolean(),
    connectedSince: z.string().describe('When the live agent connection registered (date-time).'),
    targets: z
      .array(
        z.object({
          name: z.string().describe('Target name, what a private system names in gateway.target.'),
          protocol: z.enum(['http', 'https', 'postgres', 'ftp', 'ftps', 'sftp', 'tcp']),
        }),
      )
      .describe("The agent's configured targets."),
    streamsOpen: z.number().int().describe('TCP streams open through the tunnel now.'),
    streamsOpened: z.number().int().describe('Streams opened since the agent connected.'),
    heldHere: z
      .boolean()
      .describe(
        'Whether the agent is connected to the replica that answered; the stream and byte counters are those of the replica holding it (zero elsewhere).',
      ),
    bytesIn: z.number().int().describe('Bytes received from the agent since it connected.'),
    bytesOut: z.number().int().describe('Bytes sent to the agent since it connected.'),
  })
  .meta({ id: 'Gateway' });
export type Gateway = z.infer<typeof Gateway>;

export const GatewayList = z.object({ data: z.array(Gateway) }).meta({ id: 'GatewayList' });
export type GatewayList = z.infer<typeof GatewayList>;
