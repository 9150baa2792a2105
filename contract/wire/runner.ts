/**
 * The contract between a runner Pod, the API's internal port and the operator (DESIGN.md "Async run"):
 * the runner holds only its per-run token, fetches its run order, reports events and heartbeats (each
 * answer says whether to cancel), puts its result, and leaves a short summary in its termination
 * message, which the operator reads when the result never reached the store.
 */
import { z } from 'zod';
import { Recording } from '../api/recording.ts';
import { StepResult } from '../api/run.ts';
import { JsonValue } from '../json.ts';
import { RunStateChanges } from './tool-state.ts';

/** Paths of the internal API, relative to its base URL (`KUBEGLUE_INTERNAL_URL`). */
export const INTERNAL_PATHS = {
  order: (runId: string) => `/internal/v1/runs/${encodeURIComponent(runId)}/order`,
  events: (runId: string) => `/internal/v1/runs/${encodeURIComponent(runId)}/events`,
  heartbeat: (runId: string) => `/internal/v1/runs/${encodeURIComponent(runId)}/heartbeat`,
  result: (runId: string) => `/internal/v1/runs/${encodeURIComponent(runId)}/result`,
  accessToken: (runId: string) => `/internal/v1/runs/${encodeURIComponent(runId)}/access-token`,
  identityToken: (runId: string) => `/internal/v1/runs/${encodeURIComponent(runId)}/identity-token`,
  budget: (runId: string) => `/internal/v1/runs/${encodeURIComponent(runId)}/budget`,
} as const;

/** A W3C span id: 16 lowercase hex digits. */
const SPAN_ID = /^[0-9a-f]{16}$/;

/** Key of the per-run token in its Secret. */
export const RUN_TOKEN_SECRET_KEY = 'token';

export const EngineEventBody = z.discriminatedUnion('type', [
  z.object({ type: z.literal('step_started'), stepId: z.string() }),
  z.object({ type: z.literal('step_finished'), result: StepResult }),
  z.object({
    type: z.literal('page_fetched'),
    stepId: z.string(),
    page: z.number(),
    totalFetched: z.number(),
  }),
  z.object({
    type: z.literal('retry'),
    stepId: z.string(),
    attempt: z.number().int(),
    delayMs: z.number(),
    status: z.number().int().optional(),
  }),
  z.object({
    type: z.literal('span'),
    span: z.object({
      kind: z.enum(['step', 'item', 'page']),
      spanId: z.string().regex(SPAN_ID),
      parentSpanId: z.string().regex(SPAN_ID),
      stepId: z.string(),
      index: z.number().int().min(0).optional(),
      startMs: z.number(),
      endMs: z.number(),
      failed: z.boolean(),
    }),
  }),
  z.object({
    type: z.literal('budget_wait'),
    stepId: z.string(),
    system: z.string(),
    waitMs: z.number(),
  }),
]);

/**
 * `POST …/events`: events are numbered per attempt from 1; a batch whose sequence numbers were
 * already accepted is acknowledged again without effect, so the runner may resend after a lost answer.
 */
export const EventBatch = z.strictObject({
  attempt: z.number().int().min(1),
  /** Sequence number of the first event in `events`. */
  firstSeq: z.number().int().min(1),
  events: z.array(EngineEventBody).max(1000),
});
export type EventBatch = z.infer<typeof EventBatch>;

export const Heartbeat = z.strictObject({ attempt: z.number().int().min(1) });

/** Answer of events and heartbeats: whether the run was cancelled (or is no longer running). */
export const RunnerAck = z.object({ cancel: z.boolean() });
export type RunnerAck = z.infer<typeof RunnerAck>;

export const ProducedFileBody = z.strictObject({
  fileKey: z.string(),
  filename: z.string(),
  contentType: z.string(),
  size: z.number().int().min(0),
  contentBase64: z.string(),
});

/** `PUT …/result`: the engine's result (already redacted by the engine). Written once; repeats are no-ops. */
export const ResultBody = z.strictObject({
  attempt: z.number().int().min(1),
  result: z.strictObject({
    status: z.enum(['success', 'failed', 'aborted']),
    data: JsonValue,
    stepResults: z.array(StepResult),
    error: z.string().optional(),
    files: z.array(ProducedFileBody),
    state: RunStateChanges.optional(),
    recording: Recording.optional(),
  }),
});
export type ResultBody = z.infer<typeof ResultBody>;

/** Whether the result was recorded by this call, or the run had already ended (e.g. cancelled). */
export const ResultAck = z.object({ recorded: z.boolean(), status: z.string() });

/**
 * `POST …/access-token`: the current OAuth access token of a tokenManaged system the run's tool uses
 * (the same token a worker of the API gets). `rejectedSha256`: the SHA-256 (hex) of a token the target
 * answered 401 to, which is never handed out again; the runner sends its hash, not the token.
 */
export const AccessTokenRequest = z.strictObject({
  attempt: z.number().int().min(1),
  systemId: z.string().min(1).max(253),
  rejectedSha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
});
export type AccessTokenRequest = z.infer<typeof AccessTokenRequest>;

export const AccessTokenAnswer = z.object({
  accessToken: z.string().min(1),
  /** Epoch ms; absent when the provider gave no lifetime. */
  expiresAt: z.number().optional(),
});
export type AccessTokenAnswer = z.infer<typeof AccessTokenAnswer>;

/** An identity token's audience: the origin a request goes to, as a browser writes it (`https://api.example.com`). */
export const IdentityAudience = z
  .string()
  .max(2048)
  .refine((text) => {
    try {
      const url = new URL(text);
      return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === text;
    } catch {
      return false;
    }
  }, 'an http(s) origin such as https://api.example.com');

/**
 * `POST …/identity-token`: an outbound identity token of the run for a request to `audience`
 * (`<<kubeglue_identity_jwt>>`, docs/operations.md#outbound-identity), signed by the API: the runner never
 * holds the signing key.
 */
export const IdentityTokenRequest = z.strictObject({
  attempt: z.number().int().min(1),
  audience: IdentityAudience,
});
export type IdentityTokenRequest = z.infer<typeof IdentityTokenRequest>;

export const IdentityTokenAnswer = z.object({
  token: z.string().min(1),
  /** Epoch ms. */
  expiresAt: z.number(),
});
export type IdentityTokenAnswer = z.infer<typeof IdentityTokenAnswer>;
/**
 * `POST …/budget`: a request of the run to a system with a rateLimit takes from the system's budget (the
 * answer: a BudgetAnswer), gives its maxConcurrent slot back, or pauses the budget after the system's
 * Retry-After (both answered `{}`). Times are relative (the runner's and the API's clocks may differ), and
 * a take's answer also says its moment on the API's clock (`at`, epoch ms), which a runner whose clock
 * agrees uses instead, so that the time the answer took to arrive does not move the request later.
 */
export const BudgetRequest = z.strictObject({
  attempt: z.number().int().min(1),
  systemId: z.string().min(1).max(253),
  take: z.strictObject({ withinMs: z.number().positive() }).optional(),
  release: z.strictObject({ lease: z.string().min(1).max(64) }).optional(),
  pause: z.strictObject({ forMs: z.number().positive() }).optional(),
});
export type BudgetRequest = z.infer<typeof BudgetRequest>;

export const BudgetAnswer = z.union([
  z.strictObject({ waitMs: z.number().min(0), at: z.number().optional(), lease: z.string().optional() }),
  z.strictObject({ retryInMs: z.number().positive() }),
  z.strictObject({}),
]);
export type BudgetAnswer = z.infer<typeof BudgetAnswer>;

/** The termination message of a runner container: at most 4 KiB of JSON, never payload data. */
export const TERMINATION_MESSAGE_LIMIT = 4096;

export const RunnerSummary = z.object({
  v: z.literal(1),
  runId: z.string(),
  status: z.enum(['success', 'failed', 'aborted']),
  /** Whether the internal API confirmed the result was stored. */
  resultStored: z.boolean(),
  error: z.string().optional(),
  durationMs: z.number().int().min(0).optional(),
  steps: z.array(z.object({ id: z.string(), success: z.boolean() })).optional(),
  /**
   * The runner was stopped from outside (SIGTERM: its Pod deleted, evicted or its node drained) before the
   * run finished, and left the outcome to the operator: nothing was stored as the run's result.
   */
  interrupted: z.boolean().optional(),
});
export type RunnerSummary = z.infer<typeof RunnerSummary>;

/** The summary as JSON within the limit: the error is shortened first, then the step list dropped. */
export function encodeSummary(summary: RunnerSummary): string {
  let text = JSON.stringify(summary);
  if (Buffer.byteLength(text) <= TERMINATION_MESSAGE_LIMIT) return text;
  const withoutSteps: RunnerSummary = { ...summary };
  delete withoutSteps.steps;
  text = JSON.stringify(withoutSteps);
  if (Buffer.byteLength(text) <= TERMINATION_MESSAGE_LIMIT) return text;
  const room = TERMINATION_MESSAGE_LIMIT - Buffer.byteLength(JSON.stringify({ ...withoutSteps, error: '' }));
  const error = Buffer.from(withoutSteps.error ?? '')
    .subarray(0, Math.max(0, room - 8))
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return JSON.stringify({ ...withoutSteps, error: `${error}…` });
}

/** The summary in a termination message, or undefined when it is not one (a crash's log tail). */
export function decodeSummary(message: string | undefined): RunnerSummary | undefined {
  if (!message) return undefined;
  try {
    const parsed = RunnerSummary.safeParse(JSON.parse(message));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
