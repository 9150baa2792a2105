/**
 * The error catalog: every error the API answers with is declared once, with a stable code, its HTTP
 * status, a message template and what a client should do about it, and raised by name
 * (`throw KG_ERR_TOOL_NOT_FOUND(toolId)`), as fastify does with its `FST_ERR_*`. Clients match on
 * `error.code`; messages may be reworded, codes never change meaning. A code is never reused for another
 * condition. docs/errors.md is generated from the catalog (`npm run generate`).
 *
 * The codes are declared by area in errors/ (requests.ts, auth.ts, tools.ts, runs.ts, systems.ts, …;
 * define.ts is the machinery); this module is where every caller takes them from.
 */

import { AUTH_ERRORS } from './errors/auth.ts';
import type { CatalogEntry } from './errors/define.ts';
import { FILE_ERRORS } from './errors/files.ts';
import { GATEWAY_ERRORS } from './errors/gateways.ts';
import { HOOK_ERRORS } from './errors/hooks.ts';
import { OAUTH_ERRORS } from './errors/oauth.ts';
import { REQUEST_ERRORS } from './errors/requests.ts';
import { RUNNER_ERRORS } from './errors/runner.ts';
import { RUN_ERRORS } from './errors/runs.ts';
import { SCHEDULE_ERRORS } from './errors/schedules.ts';
import { SYSTEM_ERRORS } from './errors/systems.ts';
import { TOOL_STATE_ERRORS } from './errors/tool-state.ts';
import { TOOL_ERRORS } from './errors/tools.ts';

export * from './errors/auth.ts';
export { ApiError, type CatalogEntry, type ErrorDefinition, isApiError } from './errors/define.ts';
export * from './errors/files.ts';
export * from './errors/gateways.ts';
export * from './errors/hooks.ts';
export { type ErrorIssue, formatIssue, formatIssuePath, type IssuePath } from './errors/issues.ts';
export * from './errors/oauth.ts';
export * from './errors/requests.ts';
export * from './errors/runner.ts';
export * from './errors/runs.ts';
export * from './errors/schedules.ts';
export * from './errors/systems.ts';
export * from './errors/tool-state.ts';
export * from './errors/tools.ts';

/** Every code with its status, message and fix, area by area (documentation, tests). */
export const ERROR_CATALOG: readonly CatalogEntry[] = [
  ...REQUEST_ERRORS,
  ...AUTH_ERRORS,
  ...TOOL_ERRORS,
  ...RUN_ERRORS,
  ...FILE_ERRORS,
  ...HOOK_ERRORS,
  ...SYSTEM_ERRORS,
  ...RUNNER_ERRORS,
  ...GATEWAY_ERRORS,
  ...OAUTH_ERRORS,
  ...SCHEDULE_ERRORS,
  ...TOOL_STATE_ERRORS,
];
