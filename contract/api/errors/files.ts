/** Errors of a run's files and their presigned download links. */
import { type CatalogEntry, errorArea } from './define.ts';

const { define, entries } = errorArea();

export const KG_ERR_FILE_NOT_FOUND = define(
  'KG_ERR_FILE_NOT_FOUND',
  404,
  (fileKey: string, runId: string) => `File '${fileKey}' of run '${runId}' not found`,
  "Check the file key: GET /v1/runs/{runId}/files lists the run's files (they are deleted with the run's results, KUBEGLUE_RESULT_RETENTION).",
);
export const KG_ERR_DOWNLOAD_LINK_INVALID = define(
  'KG_ERR_DOWNLOAD_LINK_INVALID',
  403,
  () => 'Download link is invalid',
  'The link was altered or cut short: get a fresh one with GET /v1/runs/{runId}/files/{fileKey}/download.',
);
export const KG_ERR_DOWNLOAD_LINK_EXPIRED = define(
  'KG_ERR_DOWNLOAD_LINK_EXPIRED',
  403,
  () => 'Download link expired',
  'Links last one hour: get a fresh one with GET /v1/runs/{runId}/files/{fileKey}/download.',
);

/** This area's codes in the order declared here (errors.ts puts the areas together into the catalog). */
export const FILE_ERRORS: readonly CatalogEntry[] = entries;
