import { z } from 'zod';
import { API_VERSION, Condition, ObjectMeta } from './meta.ts';
import { ExecutionMode, RequestSource, RunOptions, RunStatus } from './run.ts';
import { AuthType, Environment, GatewayRef, SystemId } from './system.ts';
import { checkSteps, ToolId, ToolSteps, toolFields } from './tool.ts';

const conditions = z.array(Condition).optional();

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
  observedGeneration: z.number().int().optional(),
  stepCount: z.number().int().optional(),
});
export type ToolStatus = z.infer<typeof ToolStatus>;

export const ToolResource = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('Tool'),
  metadata: ObjectMeta,
  spec: ToolSpec,
  status: ToolStatus.optional(),
});
export type ToolResource = z.infer<typeof ToolResource>;

export const SystemSpec = z.strictObject({
  id: SystemId,
  name: z.string().max(256).optional(),
  url: z.string().optional(),
  environment: Environment.default('prod'),
  documentationUrl: z.string().optional(),
  authType: AuthType.optional(),
  gateway: GatewayRef.optional(),
  credentialsSecretRef: z
    .strictObject({ name: z.string().min(1) })
    .optional()
    .describe('Secret in the same namespace whose keys are the credential names.'),
});
export type SystemSpec = z.infer<typeof SystemSpec>;

export const SystemStatus = z.object({
  conditions,
  observedGeneration: z.number().int().optional(),
  oauth: z.object({ expiresAt: z.string().optional() }).optional().describe('Token expiry; never a token.'),
});
export type SystemStatus = z.infer<typeof SystemStatus>;

export const SystemResource = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('System'),
  metadata: ObjectMeta,
  spec: SystemSpec,
  status: SystemStatus.optional(),
});
export type SystemResource = z.infer<typeof SystemResource>;

/** The tool as it was when the run was ordered; the run executes this, not later edits. */
export const ToolSnapshot = z
  .strictObject({ id: ToolId, steps: ToolSteps, ...toolFields })
  .superRefine(checkSteps);
export type ToolSnapshot = z.infer<typeof ToolSnapshot>;

/** Work order of an async run. Inputs and runtime credentials stay out of it (they live in the store). */
export const ToolRunSpec = z.strictObject({
  runId: z.string().min(1),
  tool: ToolSnapshot,
  options: RunOptions.optional(),
  requestSource: RequestSource,
  executionMode: ExecutionMode.default('prod'),
  parentRunId: z.string().optional(),
  traceId: z.string().optional(),
  userId: z.string().optional(),
  cancel: z.boolean().optional(),
});
export type ToolRunSpec = z.infer<typeof ToolRunSpec>;

export const ToolRunStepSummary = z.object({
  id: z.string(),
  success: z.boolean(),
  error: z.string().max(1024).optional(),
});

export const ToolRunStatus = z.object({
  status: RunStatus.optional(),
  startedAt: z.string().optional(),
  completedAt: z.string().optional(),
  durationMs: z.number().int().optional(),
  error: z.string().max(1024).optional().describe('Redacted and truncated; never payload data.'),
  steps: z.array(ToolRunStepSummary).optional(),
  podName: z.string().optional(),
  conditions,
  observedGeneration: z.number().int().optional(),
});
export type ToolRunStatus = z.infer<typeof ToolRunStatus>;

export const ToolRunResource = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('ToolRun'),
  metadata: ObjectMeta,
  spec: ToolRunSpec,
  status: ToolRunStatus.optional(),
});
export type ToolRunResource = z.infer<typeof ToolRunResource>;

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface ResourceDefinition {
  kind: 'Tool' | 'System' | 'ToolRun';
  plural: string;
  singular: string;
  shortNames: string[];
  spec: z.ZodType;
  status: z.ZodType;
  printerColumns: PrinterColumn[];
  description: string;
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
    printerColumns: [
      { name: 'Tool', type: 'string', jsonPath: '.spec.tool.id' },
      { name: 'Status', type: 'string', jsonPath: '.status.status' },
      { name: 'Source', type: 'string', jsonPath: '.spec.requestSource' },
      { name: 'Duration', type: 'integer', jsonPath: '.status.durationMs', description: 'Milliseconds' },
      age,
    ],
  },
];
