import { z } from 'zod';
import { KG_ERR_CURSOR_INVALID } from '../contract/api/errors.ts';
import type { StoredRun } from '../store/index.ts';

/**
 * The `cursor` of GET /v1/runs: the position after the last run of a page in the list order (started_at
 * DESC, run_id DESC) and the number of the page it leads to, as base64url JSON. It holds nothing secret
 * and grants nothing: any position is as visible as the filters and the key allow.
 */
export interface RunCursor {
  startedAt: string;
  runId: string;
  /** The page number the cursor leads to, so list responses keep numbering pages. */
  page: number;
}

const CursorJson = z.tuple([
  z.iso.datetime({ offset: true }),
  z.string().min(1).max(256),
  z.number().int().min(2),
]);

export function encodeRunCursor(last: StoredRun, nextPage: number): string {
  return Buffer.from(JSON.stringify([last.metadata.startedAt, last.runId, nextPage])).toString('base64url');
}

export function decodeRunCursor(text: string): RunCursor {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw KG_ERR_CURSOR_INVALID();
  }
  const parsed = CursorJson.safeParse(json);
  if (!parsed.success) throw KG_ERR_CURSOR_INVALID();
  const [startedAt, runId, page] = parsed.data;
  return { startedAt, runId, page };
}
