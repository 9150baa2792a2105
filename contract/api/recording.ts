/**
 * A run's recording (`options.record`, or the tool's `record`): every exchange its request steps had with
 * a system, the request as sent and the answer as received, both redacted like step results. The engine
 * makes it (engine/recording.ts), the run's finish stores it, `GET /v1/runs/{runId}/recording` answers it,
 * and a replay reads it: an exchange is found again by its step, loop item and page.
 */
import { z } from 'zod';
import { JsonValue } from '../json.ts';

export const RecordedProtocol = z.enum(['http', 'postgres', 'ftp', 'sftp', 'redis', 'mysql', 'smb']);

/** An HTTP request as sent (templates rendered, system auth applied), its credentials blanked or replaced. */
export const RecordedHttpRequest = z
  .object({
    method: z.string(),
    url: z.string(),
    query: z.array(z.tuple([z.string(), z.string()])).describe('Query parameters in the order sent.'),
    headers: z.record(z.string(), z.string()),
    body: JsonValue.optional(),
  })
  .meta({ id: 'RecordedHttpRequest' });

/** A connection protocol's request: its URL without a password and its rendered body. */
export const RecordedConnectionRequest = z
  .object({ url: z.string(), body: JsonValue.optional() })
  .meta({ id: 'RecordedConnectionRequest' });

export const RecordedExchange = z
  .object({
    stepId: z.string(),
    protocol: RecordedProtocol,
    item: z.number().int().min(0).optional().describe("The loop item's index; absent outside a loop."),
    page: z.number().int().min(1).optional().describe('The page of a paginated HTTP step, from 1.'),
    request: z.union([RecordedHttpRequest, RecordedConnectionRequest]),
    response: z
      .object({
        status: z.number().int().optional().describe('HTTP only.'),
        headers: z.record(z.string(), z.string()).optional().describe('HTTP only.'),
        data: JsonValue.optional().describe('A file is recorded as its reference, without its bytes.'),
      })
      .optional()
      .describe('Absent when the call failed (see error).'),
    error: z
      .string()
      .optional()
      .describe('Why the call failed, redacted (an HTTP error status, a refused connection).'),
  })
  .meta({ id: 'RecordedExchange' });
export type RecordedExchange = z.infer<typeof RecordedExchange>;

/** What a recording holds, as the Run view shows it. */
export const RecordingSummary = z
  .object({
    exchanges: z.number().int().min(0).describe('Exchanges kept.'),
    bytes: z.number().int().min(0).describe('Size of the kept exchanges as UTF-8 JSON.'),
    truncated: z
      .boolean()
      .describe('Exchanges were left out past the size cap (KUBEGLUE_MAX_RECORDING_BYTES).'),
  })
  .meta({ id: 'RecordingSummary' });
export type RecordingSummary = z.infer<typeof RecordingSummary>;

export const Recording = z
  .object({
    ...RecordingSummary.shape,
    leftOut: z
      .object({
        exchanges: z.number().int().min(0),
        bytes: z.number().int().min(0),
        steps: z.array(z.string()).describe('The steps whose exchanges were left out, in run order.'),
      })
      .optional()
      .describe(
        'When truncated: what the cap left out. Once one exchange is left out every later one is too, so the ' +
          'kept exchanges are the run up to that point.',
      ),
    entries: z.array(RecordedExchange).describe("The exchanges in the run's order: step, loop item, page."),
  })
  .meta({ id: 'Recording' });
export type Recording = z.infer<typeof Recording>;

/** What the Run view shows of a recording (runs.recording). */
export function recordingSummary(recording: Recording): RecordingSummary {
  return { exchanges: recording.exchanges, bytes: recording.bytes, truncated: recording.truncated };
}

/** `GET /v1/runs/{runId}/recording`. */
export const RecordingAnswer = z
  .object({ runId: z.string(), recording: Recording })
  .meta({ id: 'RecordingAnswer' });
