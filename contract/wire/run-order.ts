/**
 * The run order: everything a process needs to execute one run, as plain data. The API's worker pool sends
 * it to its workers, the internal API serves it to runner Pods (`GET …/order`, contract/wire/runner.ts) and
 * `kubeglue runner --order` reads it from a file. The engine's request (engine/types.ts EngineRequest) is
 * this order plus what cannot cross a process: the abort signal and the callbacks.
 */
import { z } from 'zod';
import { Recording } from '../api/recording.ts';
import { RuntimeCredentials, StepResult } from '../api/run.ts';
import { ApiKeyPlacement, AuthType, RateLimit } from '../api/system.ts';
import { Tool } from '../api/tool.ts';
import { JsonObject } from '../json.ts';

/** A system as a run uses it: where it is and its credentials for the run's mode. */
export const ResolvedSystem = z.object({
  id: z.string(),
  url: z.string().optional(),
  authType: AuthType.optional(),
  credentials: z.record(z.string(), z.string()),
  /** Origins besides the base URL's that may receive this system's credentials (System.extraOrigins). */
  extraOrigins: z.array(z.string()).optional(),
  /**
   * Code (transforms, and function templates outside a request to the system's origins) may read the
   * system's credentials (System.codeAccess). Absent: it may not.
   */
  codeAccess: z.boolean().optional(),
  /** Networks steps using this system may reach although the egress policy refuses private ones (System.allowedNetworks). */
  allowedNetworks: z.array(z.string()).optional(),
  /** authType apiKey without apiKeyHeader/apiKeyQueryParam: where the system's documentation says the key goes. */
  apiKeyPlacement: ApiKeyPlacement.optional(),
  /** An OAuth system whose access token the engine asks for (EngineRequest.accessToken), not a stored one. */
  tokenManaged: z.boolean().optional(),
  /** The system is reached through a gateway agent's tunnel (System.gateway). */
  gateway: z.strictObject({ tunnelId: z.string(), target: z.string() }).optional(),
  /**
   * The system has a rate budget (System.rateLimit): each request asks the run's host first
   * (EngineRequest.budget). Absent: unlimited, and nothing is asked. The host reads the limits from the
   * System itself; these say only what the engine reports while it waits.
   */
  rateLimit: RateLimit.optional(),
});
export type ResolvedSystem = z.infer<typeof ResolvedSystem>;

export const RunOrder = z.object({
  runId: z.string().min(1),
  /** The API key (id) that started the run (the run's userId): its evaluations share the sandbox fairly with other keys'. */
  keyId: z.string().optional(),
  tool: Tool,
  inputs: JsonObject.default({}),
  systems: z.array(ResolvedSystem).default([]),
  runtimeCredentials: RuntimeCredentials.optional(),
  timeoutMs: z.number().int().positive().optional(),
  traceId: z.string().min(1),
  /**
   * The run is traced (docs/operations.md "Traces"): the engine reports a span per step, loop item and page
   * (engine/spans.ts), the steps' parent being the run's span `spanId`. Absent: no spans, no span ids.
   */
  trace: z.object({ spanId: z.string().regex(/^[0-9a-f]{16}$/) }).optional(),
  /**
   * The tool's persistent state as the run reads it (`sourceData.persistedState`), or the run's stateFixture;
   * absent: the tool does not use state (contract/wire/tool-state.ts).
   */
  persistedState: JsonObject.optional(),
  /** The stored state's version the run read (absent with a stateFixture: nothing was read). */
  stateVersion: z.number().int().min(0).optional(),
  /**
   * A resumed run (POST /v1/runs/{runId}/resume): the stored results of its first steps, in order, each
   * with reusedFrom. The engine does not execute those steps: their data is in sourceData as if they had
   * just run, and their results lead the run's step results.
   */
  reusedSteps: z.array(StepResult.extend({ reusedFrom: z.string().min(1) })).optional(),
  /**
   * Record every exchange of the run's request steps (options.record, else the tool's record): the result
   * carries the recording (contract/api/recording.ts).
   */
  record: z.boolean().optional(),
  /**
   * A try (POST /v1/tools/run with untilStep): the run stops after this step, with no output transform or
   * schema, and its result carries the sourceData the next step would receive.
   */
  untilStep: z.string().min(1).optional(),
  /**
   * A replay (POST /v1/runs/{runId}/replay): the recording the run's protocol calls are answered from, with
   * no network; each request is compared with the recorded one in its redacted form (engine/replay.ts).
   */
  replay: Recording.optional(),
});
export type RunOrder = z.infer<typeof RunOrder>;
