/**
 * Persistent tool state over /v1 (docs/state.md): `GET/PUT/DELETE /v1/tools/{toolId}/state` as superglue's
 * `sg tool state get/set/reset` call them, and what a run record says about the state it read and wrote.
 */
import { z } from 'zod';
import { Instant, JsonObject } from '../json.ts';

export const ToolStateVersion = z
  .number()
  .int()
  .min(0)
  .describe('Counts the writes of the state (runs, PUT, DELETE); 0: nothing was ever stored.');

/** `GET /v1/tools/{toolId}/state`. */
export const ToolStateAnswer = z
  .object({
    toolId: z.string(),
    state: JsonObject.describe(
      'The keys and values; {} before the first write. Values that hold a credential of the ' +
        "tool's systems are shown as <<systemId_key>> placeholders.",
    ),
    version: ToolStateVersion,
    updatedAt: Instant.nullable().describe('When the state was last written; null: never.'),
  })
  .meta({ id: 'ToolState' });
export type ToolStateAnswer = z.infer<typeof ToolStateAnswer>;

/** `PUT /v1/tools/{toolId}/state`: replaces every key. */
export const ToolStatePutBody = z
  .strictObject({
    state: JsonObject.describe('The new state: every key replaced, keys left out deleted.'),
  })
  .meta({ id: 'ToolStatePut' });

export const ToolStatePutAnswer = z
  .object({
    toolId: z.string(),
    version: ToolStateVersion,
    warnings: z
      .array(z.string())
      .describe(
        'What the caller should know: runs of the tool in progress, whose changes to the replaced keys ' +
          'will be discarded as conflicts.',
      ),
  })
  .meta({ id: 'ToolStatePutResult' });

/** `DELETE /v1/tools/{toolId}/state`. */
export const ToolStateDeleteAnswer = z
  .object({
    toolId: z.string(),
    deletedKeys: z.number().int().min(0).describe('How many keys the state had.'),
    version: ToolStateVersion,
  })
  .meta({ id: 'ToolStateDeleteResult' });

/** What a run record says about the state (Run.metadata.state). */
export const RunStateRecord = z
  .object({
    versionRead: ToolStateVersion.optional().describe('The version of the tool state the run read.'),
    versionWritten: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('The version the run saved its changes as; absent: it saved none.'),
    fixture: z
      .literal(true)
      .optional()
      .describe('The run read its stateFixture instead of the stored state and saved nothing.'),
  })
  .meta({ id: 'RunStateRecord' });
export type RunStateRecord = z.infer<typeof RunStateRecord>;
