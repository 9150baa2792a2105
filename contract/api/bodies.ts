import { z } from 'zod';
import { Instant } from '../json.ts';
import { plainText } from '../text.ts';
import { TargetProtocol } from '../wire/target-protocol.ts';
import { pageLimit } from './paging.ts';
import { RUNS_OFFSET_MAX, Run } from './run.ts';
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
      hint: z
        .string()
        .optional()
        .describe(
          "Extension: what to do about it, from the error catalog (docs/errors.md's 'What to do'); show it to people.",
        ),
      issues: z
        .array(
          z.object({
            path: z
              .array(z.union([z.string(), z.number().int()]))
              .describe(
                "The field, from the root of what the message names (the body, or the query): ['steps', 0, 'config', 'transformCode'].",
              ),
            message: z.string().describe('What is wrong with it.'),
            line: z
              .number()
              .int()
              .optional()
              .describe("For code that does not compile: the line in the field's own text, from 1."),
            column: z.number().int().optional().describe('With line: the column, from 1.'),
          }),
        )
        .optional()
        .describe(
          'Extension: each problem at its field, for the errors that refuse input field by field ' +
            '(KG_ERR_VALIDATION, KG_ERR_INPUTS_INVALID, KG_ERR_TOOL_INVALID), so a client can show it there.',
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
    total: z
      .number()
      .int()
      .describe(
        `Matching runs, counted exactly up to ${RUNS_OFFSET_MAX} (the runs offset paging reaches); when more ` +
          `match, ${RUNS_OFFSET_MAX} and totalExact is false.`,
      ),
    totalExact: z
      .boolean()
      .describe(
        `Extension: false when more than ${RUNS_OFFSET_MAX} runs match and total is that lower bound ` +
          "(as Elasticsearch's track_total_hits); hasMore and nextCursor say whether another page follows.",
      ),
    nextCursor: z
      .string()
      .nullable()
      .describe('Extension: pass as ?cursor= for the next page (keyset paging); null on the last page.'),
  })
  .meta({ id: 'RunList' });
export const ToolFolder = z
  .object({
    path: z.string().describe('The folder (a/b); its parents are listed too.'),
    tools: z.number().int().describe('How many of the tools are in it or below it.'),
  })
  .meta({ id: 'ToolFolder' });

export const ToolList = listEnvelope(Tool)
  .extend({
    folders: z
      .array(ToolFolder)
      .describe(
        'Extension: every folder of the tools the key may see (with the includeArchived filter, whatever ' +
          'folder and search are), sorted, so a client can offer them all as filters.',
      ),
  })
  .meta({ id: 'ToolList' });
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
    .enum(['true', 'false', 'only'])
    .default('false')
    .transform((v) => (v === 'only' ? v : v === 'true'))
    .describe(
      'false (default): active tools; true: archived ones too; only (extension): archived ones only.',
    ),
  folder: z.string().optional().describe('Tools in this folder and below it (a/b).'),
  search: z
    .string()
    .max(256)
    .optional()
    .describe(
      'Extension: words that must all appear, in any case, in the id, name, instruction or folder of a tool.',
    ),
  token: z.string().optional(),
});

/**
 * What an API key may do: a closed set, one scope per kind of access. Reading runs is its own scope (a
 * dashboard or a monitor reads runs without running anything; a webhook sender runs a tool without
 * reading other runs), and gateways:host grants nothing but hosting tunnels (an agent holds that key on a
 * machine in a private network).
 */
export const SCOPES = [
  'tools:read',
  'tools:write',
  'runs:read',
  'runs:execute',
  'systems:read',
  'systems:write',
  'keys:admin',
  'gateways:host',
] as const;

export const Scope = z
  .enum(SCOPES)
  .describe(
    'tools:read: list and read tools. tools:write: create, change and delete tools, run unsaved definitions. ' +
      'runs:read: runs, their results, files and live events. runs:execute: run tools, webhooks, cancel runs. ' +
      'systems:read: systems, their credential keys (never values), documentation, gateways. ' +
      'systems:write: create, change and delete systems, OAuth authorization. keys:admin: manage API keys ' +
      'and tunnel ownership. gateways:host: connect gateway agents (register tunnels).',
  )
  .meta({ id: 'Scope' });
export type Scope = z.infer<typeof Scope>;

const KeySystemIds = z
  .array(z.string().min(1))
  .min(1)
  .describe(
    'The systems the key may use in tools it saves and in the runs it starts (and the only systems it sees); ' +
      'absent or null: every system.',
  );

const quotaLimit = (what: string) =>
  z.number().int().min(1).max(1_000_000).nullable().optional().describe(`${what}; null or absent: no limit.`);

/** An API key's quotas (docs/operations.md#quotas-per-api-key); over one, a run is refused with 429. */
export const ApiKeyQuotas = z
  .strictObject({
    runsPerMinute: quotaLimit(
      'Runs the key may start per minute (fixed windows starting on the minute), counted across replicas',
    ),
    concurrentRuns: quotaLimit(
      'Runs of the key that may be in progress at once (accepted and not ended, queued ones included), counted across replicas',
    ),
  })
  .meta({ id: 'ApiKeyQuotas' });

export const ApiKeyCreateBody = z
  .strictObject({
    name: plainText(z.string().min(1).max(128)),
    scopes: z
      .array(Scope)
      .min(1)
      .optional()
      .describe(
        'What the key may do. Absent: what such a key could do before scopes existed (every scope but ' +
          'keys:admin and gateways:host; with toolIds only tools:read, runs:read and runs:execute). A key ' +
          'can grant only scopes, tools and systems it has itself.',
      ),
    toolIds: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe('Restrict the key to these tools (and their runs).'),
    systemIds: KeySystemIds.optional(),
    admin: z
      .boolean()
      .default(false)
      .describe('Every scope, no tool or system restriction (only an admin key may create one).'),
    hostGateways: z
      .boolean()
      .default(false)
      .describe(
        'Deprecated spelling of scopes: ["gateways:host"]: a key that may connect gateway agents only.',
      ),
    quotas: ApiKeyQuotas.optional().describe('Limits of the runs the key starts; absent: none.'),
  })
  .meta({ id: 'ApiKeyCreateBody' });

/** Body of `PATCH /v1/api-keys/{keyId}`: what changes; a quota given null is removed. */
export const ApiKeyUpdateBody = z
  .strictObject({
    quotas: ApiKeyQuotas.describe(
      'The quotas to set: a field given replaces that quota (null removes it), a field left out keeps it.',
    ),
  })
  .meta({ id: 'ApiKeyUpdateBody' });

export const ApiKey = z
  .object({
    id: z.string(),
    name: z.string(),
    scopes: z.array(Scope).describe('What the key may do (admin keys: every scope).'),
    toolIds: z.array(z.string()).nullable(),
    systemIds: z.array(z.string()).nullable().describe('The systems the key may use; null: every system.'),
    admin: z.boolean().describe('Every scope and no restriction.'),
    hostGateways: z.boolean().describe('Whether scopes include gateways:host.'),
    createdAt: Instant,
    lastUsedAt: Instant.nullable(),
    quotas: z
      .object({ runsPerMinute: z.number().int().nullable(), concurrentRuns: z.number().int().nullable() })
      .describe('Limits of the runs the key starts (null: none).'),
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
    scopes: z.array(Scope).describe('What the key may do.'),
    toolIds: z.array(z.string()).nullable().describe('The tools the key is limited to; null: every tool.'),
    systemIds: z.array(z.string()).nullable().describe('The systems the key may use; null: every system.'),
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
          // As the agent advertised it (wire/target-protocol.ts).
          protocol: TargetProtocol,
        }),
      )
      .describe("The agent's configured targets."),
    streamsOpen: z.number().int().describe('TCP streams open through the tunnel now.'),
    streamsOpened: z.number().int().describe('Streams opened since the agent connected.'),
    replica: z
      .string()
      .describe(
        'The API replica the agent is connected to (its KUBEGLUE_POD_NAME, else its host name): every replica reaches the tunnel through it.',
      ),
    heldHere: z.boolean().describe('Whether the agent is connected to the replica that answered.'),
    bytesIn: z.number().int().describe('Bytes received from the agent since it connected.'),
    bytesOut: z.number().int().describe('Bytes sent to the agent since it connected.'),
    countersAt: z
      .string()
      .describe(
        'When the stream and byte counters were counted (date-time): now on the replica holding the tunnel, its latest heartbeat (KUBEGLUE_GATEWAY_HEARTBEAT_MS) on the others.',
      ),
  })
  .meta({ id: 'Gateway' });
export type Gateway = z.infer<typeof Gateway>;

export const GatewayList = z.object({ data: z.array(Gateway) }).meta({ id: 'GatewayList' });
export type GatewayList = z.infer<typeof GatewayList>;
