/**
 * store/: the schema, its migrations, the Postgres and SQLite drivers and the queries. This file is the
 * store's public surface: everything outside store/ imports from here.
 *
 * May import: contract.
 */
export { PG_DIALECT, SQLITE_DIALECT } from './dialect.ts';
export type { DriverName } from './driver.ts';
export {
  EMBEDDED_STORE_FILE,
  embeddedStorePath,
  hasPgliteData,
  pgliteNotConvertedMessage,
} from './embedded-file.ts';
export type { MigrationReport } from './migrate.ts';
export { MIGRATIONS, type Migration } from './migrations.ts';
export type {
  ClaimedDocumentation,
  DocumentationKey,
  DocumentationState as StoredDocumentationState,
  DocumentationStore,
} from './queries/documentation.ts';
export type { GatewayTunnelOwnerQueries } from './queries/gateway-tunnel-owners.ts';
export type { GatewayTunnelQueries, GatewayTunnelRow } from './queries/gateway-tunnels.ts';
export type { IdentityKeyQueries, IdentityKeyRow } from './queries/identity-keys.ts';
export type {
  OAuthQueries,
  OAuthStateRow,
  OAuthTokenRow,
  OAuthTokenStatus,
  OAuthTokenWrite,
} from './queries/oauth.ts';
export { OUTBOX_CHANNEL } from './queries/outbox.ts';
export type {
  ResourceChange,
  ResourceEvent,
  ResourceEventPage,
  ResourceEventType,
  ResourceKey,
  ResourceList,
  ResourceRecord,
  ResourceWriter,
} from './queries/resources.ts';
export type {
  KeyQuotaRequest,
  KeyQuotaState,
  RateState,
  RunSlotQueries,
  SlotClaim,
  SlotClaimRequest,
  ToolSlot,
  ToolSlotRequest,
  WaitingSlot,
} from './queries/run-slots.ts';
export type {
  BucketCount,
  RunStatsQueries,
  RunStatsWindow,
  StatusCounts,
  ToolWindowStats,
  WaitingRunRow,
} from './queries/run-stats.ts';
export { buildListRunsQuery, type ListRunsQuery, RUNS_TOTAL_CAP } from './queries/runs.ts';
export type {
  NewTickClaim,
  ScheduleTickQueries,
  TickClaim,
  TickOutcome,
} from './queries/schedule-ticks.ts';
export type {
  BudgetLimit,
  BudgetTake,
  BudgetTakeRequest,
  BudgetUse,
  SystemBudgetQueries,
} from './queries/system-budgets.ts';
export type { StoredToolState, ToolStateChange, ToolStateQueries } from './queries/tool-state.ts';
export type { RunWriteBatcher, RunWriteBatcherOptions } from './run-batcher.ts';
export {
  type OpenStoreOptions,
  openStore,
  type ResourceStore,
  type Store,
  type StoreConfig,
  type StoreQueries,
} from './store.ts';
export type * from './types.ts';
