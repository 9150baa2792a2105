import { z } from 'zod';
import { Attempt, ExecutionMode, RequestSource, RunOptions, RunStatus } from '../api/run.ts';
import { scheduleFields } from '../api/schedule.ts';
import { Environment, SystemId, systemFields } from '../api/system.ts';
import { checkSteps, ToolId, ToolSteps, toolFields } from '../api/tool.ts';
import { RunReason, reasonList, TickReason } from '../reasons.ts';
import { API_VERSION, Condition, ObjectMeta } from './meta.ts';

const conditions = z.array(Condition).optional().describe("The latest observations of the object's state.");
const observedGeneration = z
  .number()
  .int()
  .optional()
  .describe('The generation of the spec the status describes.');

/** A kubeglue resource of the kind: apiVersion, kind, metadata, its spec and, once written, its status. */
function resourceSchema<K extends string, Spec extends z.ZodType, Status extends z.ZodType>(
  kind: K,
  spec: Spec,
  status: Status,
) {
  return z.object({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal(kind),
    metadata: ObjectMeta,
    spec,
    status: status.optional(),
  });
}

export const ToolSpec = z
  .strictObject({
    id: ToolId.optional().describe(
      'The tool id when it is not a valid resource name; else metadata.name is the id.',
    ),
    steps: ToolSteps,
    ...toolFields,
  })
  .superRefine(checkSteps);
export type ToolSpec = z.infer<typeof ToolSpec>;

export const ToolStatus = z.object({
  conditions,
  observedGeneration,
  stepCount: z.number().int().optional().describe('How many steps the tool has.'),
});
export type ToolStatus = z.infer<typeof ToolStatus>;

export const ToolResource = resourceSchema('Tool', ToolSpec, ToolStatus);
export type ToolResource = z.infer<typeof ToolResource>;

/**
 * A Tool resource as kept in Git and given to `kubectl apply`: its name, namespace and spec, nothing the
 * server or the cluster sets (`GET /v1/tools/{id}/manifest`, built by toolManifest in convert.ts).
 */
export const ToolManifest = ToolResource.omit({ status: true }).meta({ id: 'ToolManifest' });
export type ToolManifest = z.infer<typeof ToolManifest>;

export const SystemSpec = z.strictObject({
  id: SystemId.describe('The system id steps use as systemId (dev and prod objects share it).'),
  ...systemFields,
  environment: Environment.default('prod').describe(
    'dev or prod: a run in mode dev uses the dev object of the id, else the only one.',
  ),
  credentialsSecretRef: z
    .strictObject({ name: z.string().min(1).describe('Name of the Secret.') })
    .optional()
    .describe('Secret in the same namespace whose keys are the credential names.'),
});
export type SystemSpec = z.infer<typeof SystemSpec>;

export const SystemStatus = z.object({
  conditions,
  observedGeneration,
  oauth: z
    .object({ expiresAt: z.string().optional().describe('When the current access token expires.') })
    .optional()
    .describe('Token expiry; never a token.'),
});
export type SystemStatus = z.infer<typeof SystemStatus>;

export const SystemResource = resourceSchema('System', SystemSpec, SystemStatus);
export type SystemResource = z.infer<typeof SystemResource>;

/** The tool as it was when the run was ordered; the run executes this, not later edits. */
export const ToolSnapshot = z
  .strictObject({ id: ToolId.describe('The tool id.'), steps: ToolSteps, ...toolFields })
  .superRefine(checkSteps);
export type ToolSnapshot = z.infer<typeof ToolSnapshot>;

/** Work order of an async run. Inputs and runtime credentials stay out of it (they live in the store). */
export const ToolRunSpec = z.strictObject({
  runId: z.string().min(1).describe('The run this object orders; GET /v1/runs/{runId} is its record.'),
  tool: ToolSnapshot.describe('The tool as it was when the run was accepted; later edits do not apply.'),
  options: RunOptions.optional().describe('The run options of the request.'),
  requestSource: RequestSource.describe('Who started the run: api, webhook, tool-chain, …'),
  executionMode: ExecutionMode.default('prod').describe(
    'Which system credentials the run uses: prod or dev.',
  ),
  parentRunId: z.string().optional().describe('The run whose success started this one (tool chaining).'),
  traceId: z.string().optional().describe('Trace id, propagated to outbound HTTP as traceparent.'),
  userId: z.string().optional().describe('The API key that started the run.'),
  cancel: z
    .boolean()
    .optional()
    .describe(
      'true cancels the run: the runner stops at its next heartbeat, its Pod is deleted after a grace period.',
    ),
});
export type ToolRunSpec = z.infer<typeof ToolRunSpec>;

export const ToolRunStepSummary = z.object({
  id: z.string().describe('Step id.'),
  success: z.boolean().describe('Whether the step succeeded.'),
  error: z.string().max(1024).optional().describe('Why it failed: redacted and truncated.'),
});

export const ToolRunStatus = z.object({
  status: RunStatus.optional().describe('running, success, failed or aborted, as in the run record.'),
  startedAt: z.string().optional().describe('When the run was admitted.'),
  completedAt: z.string().optional().describe('When the run ended.'),
  durationMs: z.number().int().optional().describe("Milliseconds from the run's start to its end."),
  duration: z
    .string()
    .optional()
    .describe('durationMs as people read it (1.2s, 3m4s, 1h2m3s): the Duration column of kubectl get.'),
  error: z.string().max(1024).optional().describe('Redacted and truncated; never payload data.'),
  steps: z.array(ToolRunStepSummary).optional().describe('One summary per step run: never its data.'),
  reason: z
    .string()
    .optional()
    .describe(`Why the run is where it is, as a named reason (docs/reasons.md): ${reasonList(RunReason)}.`),
  attempt: Attempt.optional().describe(
    'The execution attempt launched for this run (its runner Pod is named after it); above 1 when a read-only run started over after a lost execution.',
  ),
  executionPhase: z
    .enum(['Pending', 'Running', 'Finished'])
    .optional()
    .describe('Where the execution is: Pending (launched, not started), Running, Finished.'),
  podName: z.string().optional().describe('The runner Pod of the current attempt (Kubernetes deployment).'),
  conditions,
  observedGeneration,
});
export type ToolRunStatus = z.infer<typeof ToolRunStatus>;

export const ToolRunResource = resourceSchema('ToolRun', ToolRunSpec, ToolRunStatus);
export type ToolRunResource = z.infer<typeof ToolRunResource>;

/** A cron schedule of a tool, as a CronJob is of a Job: each tick starts one run (schedules/). */
export const ToolScheduleSpec = z.strictObject(scheduleFields);
export type ToolScheduleSpec = z.infer<typeof ToolScheduleSpec>;

export const ToolScheduleStatus = z.object({
  lastScheduleTime: z.string().optional().describe('The latest tick a run was started for.'),
  nextScheduleTime: z
    .string()
    .optional()
    .describe('The next tick that will start a run; absent while suspended, paused or invalid.'),
  lastRunId: z.string().optional().describe('The run started for the latest tick (GET /v1/runs/{runId}).'),
  lastTick: z
    .object({
      time: z.string().describe('When the tick was.'),
      outcome: z
        .enum(['Started', 'Skipped', 'Missed'])
        .describe(
          'Started: its run started. Skipped: see reason. Missed: later than startingDeadlineSeconds.',
        ),
      reason: z
        .string()
        .optional()
        .describe(`Why no run started (docs/reasons.md): ${reasonList(TickReason)}.`),
    })
    .optional()
    .describe('The latest tick the schedule acted on, and what it did.'),
  active: z
    .array(z.string())
    .optional()
    .describe('Run ids of this schedule still running, as last seen (refreshed while any run).'),
  conditions,
  observedGeneration,
});
export type ToolScheduleStatus = z.infer<typeof ToolScheduleStatus>;

export const ToolScheduleResource = resourceSchema('ToolSchedule', ToolScheduleSpec, ToolScheduleStatus);
export type ToolScheduleResource = z.infer<typeof ToolScheduleResource>;

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface ResourceDefinition {
  kind: 'Tool' | 'System' | 'ToolRun' | 'ToolSchedule';
  plural: string;
  singular: string;
  shortNames: string[];
  spec: z.ZodType;
  status: z.ZodType;
  printerColumns: PrinterColumn[];
  description: string;
  /** What `kubectl explain <kind>.spec` says of the spec itself. */
  specDescription: string;
  /** What `kubectl explain <kind>.status` says of the status itself. */
  statusDescription: string;
}

const age: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
const ready: PrinterColumn = {
  name: 'Ready',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
};

/** Everything the CRD generator needs, per kind. */
export const RESOURCE_DEFINITIONS: ResourceDefinition[] = [
  {
    kind: 'Tool',
    plural: 'tools',
    singular: 'tool',
    shortNames: ['kgtool'],
    spec: ToolSpec,
    status: ToolStatus,
    description: 'A stored, ordered workflow of request and transform steps.',
    specDescription:
      'The tool as its author wrote it: its steps (requests to systems and transforms, run in order), the input and output schemas and the run defaults. The operator checks it and reports the outcome in status.',
    statusDescription:
      'What the operator found when it checked the spec: the Ready condition (True when every step checks out, else the reason and every problem), the step count and the generation checked.',
    printerColumns: [ready, { name: 'Steps', type: 'integer', jsonPath: '.status.stepCount' }, age],
  },
  {
    kind: 'System',
    plural: 'systems',
    singular: 'system',
    shortNames: ['kgsys'],
    spec: SystemSpec,
    status: SystemStatus,
    description: 'A reusable connection to an external system; credentials live in the referenced Secret.',
    specDescription:
      'How to reach the system: its id (what steps name as systemId), base URL, auth type, environment (dev or prod) and the Secret holding its credentials.',
    statusDescription:
      'What the operator found: the Ready condition (whether runs can use the system: its Secret exists and fits the auth type), EnvironmentsLinked (whether the other environment exists) and OAuth token expiry, never a credential.',
    printerColumns: [
      { name: 'Environment', type: 'string', jsonPath: '.spec.environment' },
      { name: 'URL', type: 'string', jsonPath: '.spec.url' },
      ready,
      age,
    ],
  },
  {
    kind: 'ToolRun',
    plural: 'toolruns',
    singular: 'toolrun',
    shortNames: ['kgrun'],
    spec: ToolRunSpec,
    status: ToolRunStatus,
    description: 'The work order of one asynchronous run; the run record itself lives in the store.',
    specDescription:
      'The run as it was accepted: its run id, a snapshot of the tool, the run options, who started it and the execution mode. Inputs and runtime credentials stay in the store. Set cancel to true to cancel the run.',
    statusDescription:
      'Where the run is, mirrored by the operator: its status and reason, start, end and duration, the runner Pod and attempt, a summary per step (never data) and the Admitted and Succeeded conditions.',
    printerColumns: [
      { name: 'Tool', type: 'string', jsonPath: '.spec.tool.id' },
      { name: 'Status', type: 'string', jsonPath: '.status.status' },
      { name: 'Source', type: 'string', jsonPath: '.spec.requestSource' },
      {
        name: 'Duration',
        type: 'string',
        jsonPath: '.status.duration',
        description: "From the run's start to its end (status.durationMs in milliseconds)",
      },
      { name: 'Reason', type: 'string', jsonPath: '.status.reason', priority: 1 },
      { name: 'Pod', type: 'string', jsonPath: '.status.podName', priority: 1 },
      age,
    ],
  },
  {
    kind: 'ToolSchedule',
    plural: 'toolschedules',
    singular: 'toolschedule',
    shortNames: ['kgsched'],
    spec: ToolScheduleSpec,
    status: ToolScheduleStatus,
    description: 'Runs a tool on a cron schedule in a time zone: one run per tick, like a CronJob.',
    specDescription:
      'Which tool runs when: the tool id, the cron schedule and time zone, the run inputs and options, the concurrency policy, the starting deadline and suspend.',
    statusDescription:
      'What the schedule did: its last and next tick, the run the last tick started, the runs still active and the Ready condition.',
    printerColumns: [
      { name: 'Tool', type: 'string', jsonPath: '.spec.toolId', priority: 1 },
      { name: 'Schedule', type: 'string', jsonPath: '.spec.schedule' },
      { name: 'Timezone', type: 'string', jsonPath: '.spec.timeZone' },
      { name: 'Suspended', type: 'boolean', jsonPath: '.spec.suspend' },
      { name: 'Last', type: 'date', jsonPath: '.status.lastScheduleTime' },
      { name: 'Next', type: 'string', jsonPath: '.status.nextScheduleTime' },
      ready,
      {
        name: 'Reason',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
        priority: 1,
      },
      age,
    ],
  },
];
