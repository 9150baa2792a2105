/**
 * The store's schema: every migration, in order, one file each in migrations/ (migration.ts says what a
 * migration is).
 */
import { runsAndRunResults } from './migrations/001-runs-and-run-results.ts';
import { apiKeysAndOutbox } from './migrations/002-api-keys-and-outbox.ts';
import { embeddedResources } from './migrations/003-embedded-resources.ts';
import { embeddedSecrets } from './migrations/004-embedded-secrets.ts';
import { runToolRestriction } from './migrations/005-run-tool-restriction.ts';
import { runtimeCredentials } from './migrations/006-runtime-credentials.ts';
import { runnerExecutions } from './migrations/007-runner-executions.ts';
import { retentionIndexes } from './migrations/008-retention-indexes.ts';
import { systemDocumentation } from './migrations/009-system-documentation.ts';
import { oauthTokens } from './migrations/010-oauth-tokens.ts';
import { gatewayTunnels } from './migrations/011-gateway-tunnels.ts';
import { gatewayHostingKeys } from './migrations/012-gateway-hosting-keys.ts';
import { apiKeyScopes } from './migrations/013-api-key-scopes.ts';
import { tunnelOwners } from './migrations/014-tunnel-owners.ts';
import { runAttempts } from './migrations/015-run-attempts.ts';
import { outboxFailedAttempts } from './migrations/016-outbox-failed-attempts.ts';
import { scheduleTickClaims } from './migrations/017-schedule-tick-claims.ts';
import { toolState } from './migrations/018-tool-state.ts';
import { tunnelReplicasAndCounters } from './migrations/019-tunnel-replicas-and-counters.ts';
import { documentationRetry } from './migrations/020-documentation-retry.ts';
import { runStatsIndex } from './migrations/021-run-stats-index.ts';
import { runSystems } from './migrations/022-run-systems.ts';
import { runResumes } from './migrations/023-run-resumes.ts';
import { runRecordings } from './migrations/024-run-recordings.ts';
import { systemBudgets } from './migrations/025-system-budgets.ts';
import { runSlotsAndKeyQuotas } from './migrations/026-run-slots-and-key-quotas.ts';
import { identityKeys } from './migrations/027-identity-keys.ts';
import type { Migration } from './migrations/migration.ts';

export type { Migration } from './migrations/migration.ts';

/**
 * Append-only: never edit or reorder an entry that has shipped; add a new one with the next id, in both
 * dialects, in a file of its own in migrations/ listed last here. Each entry runs inside the migration
 * transaction, so it must not use statements that refuse to run in one (CREATE INDEX CONCURRENTLY, VACUUM).
 */
export const MIGRATIONS: readonly Migration[] = [
  runsAndRunResults,
  apiKeysAndOutbox,
  embeddedResources,
  embeddedSecrets,
  runToolRestriction,
  runtimeCredentials,
  runnerExecutions,
  retentionIndexes,
  systemDocumentation,
  oauthTokens,
  gatewayTunnels,
  gatewayHostingKeys,
  apiKeyScopes,
  tunnelOwners,
  runAttempts,
  outboxFailedAttempts,
  scheduleTickClaims,
  toolState,
  tunnelReplicasAndCounters,
  documentationRetry,
  runStatsIndex,
  runSystems,
  runResumes,
  runRecordings,
  systemBudgets,
  runSlotsAndKeyQuotas,
  identityKeys,
];
