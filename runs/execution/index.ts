/**
 * runs/execution/: one execution layer for every run, whichever process executes it — the sync path and
 * the pool launcher in this process's worker pool, a runner Pod through the internal API. `order.ts` is
 * the only place a run order is built; `report.ts` the only consumer of what an execution reports (step
 * timings, live events, a runner's stored step results); `finish.ts` the only place an execution's
 * outcome makes its run terminal (the terminal write with its state commit and outbox rows, the run's end
 * on the streams, the metrics, the credential drop). `in-process.ts` is what the two in-process transports
 * share. The transports (runs/execute-sync.ts, operator/launchers/pool.ts, api/internal/routes.ts) only
 * carry orders, events and results; docs/developers/run-path.md draws the three paths. Of runs/, it uses
 * only what lies beside it: the completion effects (completion.ts) and the live-event hub (run-events.ts).
 *
 * May import: contract, config, engine, kube, store, platform, tools, systems, runs.
 *
 * This file is the layer's one door: the rest of the code reaches it only through what it exports.
 */
export {
  type FinishDeps,
  type FinishMetrics,
  failedFinish,
  failedResult,
  finishRun,
  finishUnrecorded,
  type RecordedFinish,
  storedOutcome,
} from './finish.ts';
export { type AccessTokens, type Budgets, executeInPool, type InProcessOptions } from './in-process.ts';
export { buildOrder, OrderRefusal, type OrderSources } from './order.ts';
export { type BatchVerdict, type ReportSinks, type RunEnd, RunnerReports, RunReport } from './report.ts';
export { asReused, type StepResultsStore, storedStepResults } from './reuse.ts';
export { parentSpanOption, withoutTraceOptions } from './trace.ts';
