import { z } from 'zod';

/** API group and version of every kubeglue custom resource. */
export const GROUP = 'kubeglue.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

export const OwnerReference = z.object({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string(),
  uid: z.string(),
  controller: z.boolean().optional(),
  blockOwnerDeletion: z.boolean().optional(),
});
export type OwnerReference = z.infer<typeof OwnerReference>;

/** The subset of Kubernetes ObjectMeta that kubeglue reads and writes. */
export const ObjectMeta = z.object({
  name: z.string().min(1).max(253),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().int().optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  ownerReferences: z.array(OwnerReference).optional(),
  finalizers: z.array(z.string()).optional(),
});
export type ObjectMeta = z.infer<typeof ObjectMeta>;

export const ConditionStatus = z.enum(['True', 'False', 'Unknown']);

/** metav1.Condition. */
export const Condition = z.object({
  type: z.string().describe('What the condition is about: Ready, Admitted, Succeeded, EnvironmentsLinked.'),
  status: ConditionStatus.describe('True, False or Unknown.'),
  reason: z.string().describe('Why, as a stable CamelCase word (listed in docs/reasons.md).'),
  message: z.string().describe('Why, for people: every problem found, never a secret.'),
  lastTransitionTime: z.string().describe('When status last changed.'),
  observedGeneration: z
    .number()
    .int()
    .optional()
    .describe('The generation of the spec this condition judged.'),
});
export type Condition = z.infer<typeof Condition>;

/** Shape shared by every object the Resources interface handles. */
export interface KubeObject<Spec = unknown, Status = unknown> {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status;
}
