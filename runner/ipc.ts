import type { JsonObject } from '../crds/json.ts';
import type { RuntimeCredentials } from '../crds/run.ts';
import type { Tool } from '../crds/tool.ts';
import type { EngineEvent, EngineResult, ResolvedSystem } from './engine/types.ts';

/** Everything a worker needs to execute one run; plain data, so it crosses process boundaries. */
export interface RunOrder {
  runId: string;
  tool: Tool;
  inputs: JsonObject;
  systems: ResolvedSystem[];
  runtimeCredentials?: RuntimeCredentials | undefined;
  timeoutMs?: number | undefined;
  traceId: string;
}

export type ToWorker =
  /** events: true sends every engine event, 'progress' the same without step data (false: none). */
  | { type: 'run'; id: number; order: RunOrder; events: boolean | 'progress' }
  | { type: 'cancel'; id: number }
  | { type: 'shutdown' };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'event'; id: number; event: EngineEvent }
  | { type: 'result'; id: number; result: EngineResult };
