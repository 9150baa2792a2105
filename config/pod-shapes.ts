/**
 * Pieces of a runner Pod a platform engineer sets as JSON in the operator's settings: placement
 * (nodeSelector, tolerations, affinity), extra labels and annotations, and adjustments of the security
 * contexts. Checked at start, so a typo stops the operator instead of failing every run's Pod; the API
 * server still has the last word on what it accepts.
 */
import { z } from 'zod';
import { COMPONENT_LABEL, MANAGED_BY_LABEL } from '../contract/resources/labels.ts';

/** JSON text, parsed and then checked against `schema`. */
export function json<S extends z.ZodType>(schema: S, kind: string) {
  return z
    .string()
    .transform((text, context) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        context.addIssue({ code: 'custom', message: 'must be JSON' });
        return z.NEVER;
      }
    })
    .pipe(schema)
    .meta({ kind });
}

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const PREFIX = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A label or annotation key: `[prefix/]name`, as Kubernetes checks it. */
function isQualifiedName(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return NAME.test(key);
  return PREFIX.test(key.slice(0, slash)) && NAME.test(key.slice(slash + 1));
}

const qualifiedName = z.string().refine(isQualifiedName, 'must be a Kubernetes label key ([prefix/]name)');
const labelValue = z.string().refine((value) => value === '' || NAME.test(value), {
  message: 'must be a label value (up to 63 letters, digits, -, _ and ., starting and ending alphanumeric)',
});

/** The prefix of every label and annotation kubeglue itself reads on runner Pods. */
const OWN_PREFIX = 'kubeglue.dev/';

/** Besides kubeglue.dev/*: what the runner Pods' NetworkPolicy and the operator select them by. */
const RESERVED_LABELS: readonly string[] = [COMPONENT_LABEL, MANAGED_BY_LABEL];

/** Labels added to runner Pods; the ones kubeglue sets and selects them by cannot be. */
export const extraLabels = z.record(qualifiedName, labelValue).superRefine((labels, context) => {
  for (const key of Object.keys(labels)) {
    if (key.startsWith(OWN_PREFIX) || RESERVED_LABELS.includes(key))
      context.addIssue({ code: 'custom', message: `${key} is set by kubeglue on runner Pods` });
  }
});

export const extraAnnotations = z.record(qualifiedName, z.string()).superRefine((annotations, context) => {
  for (const key of Object.keys(annotations)) {
    if (key.startsWith(OWN_PREFIX))
      context.addIssue({ code: 'custom', message: `${key} is set by kubeglue on runner Pods` });
  }
});

export const nodeSelector = z.record(qualifiedName, labelValue);

export const tolerations = z.array(
  z.strictObject({
    key: z.string().optional(),
    operator: z.enum(['Exists', 'Equal']).optional(),
    value: z.string().optional(),
    effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute', '']).optional(),
    tolerationSeconds: z.number().int().optional(),
  }),
);

/** The three kinds of affinity; their terms are the API server's to check. */
export const affinity = z.strictObject({
  nodeAffinity: z.record(z.string(), z.unknown()).optional(),
  podAffinity: z.record(z.string(), z.unknown()).optional(),
  podAntiAffinity: z.record(z.string(), z.unknown()).optional(),
});

const seccompProfile = z.strictObject({
  // Never Unconfined: the restricted profile allows these two only.
  type: z.enum(['RuntimeDefault', 'Localhost']),
  localhostProfile: z.string().optional(),
});
const seLinuxOptions = z.strictObject({
  user: z.string().optional(),
  role: z.string().optional(),
  type: z.string().optional(),
  level: z.string().optional(),
});

/**
 * What may be changed in the security contexts: the identities, the seccomp and SELinux profiles, and
 * (null) a field left for the platform to fill (OpenShift assigns the user itself). Nothing that would
 * loosen the restricted profile: root, privilege escalation, capabilities and a writable root filesystem
 * are not here at all.
 */
const identity = {
  runAsUser: z.number().int().min(1).nullable().optional(),
  runAsGroup: z.number().int().min(0).nullable().optional(),
  seccompProfile: seccompProfile.nullable().optional(),
  seLinuxOptions: seLinuxOptions.nullable().optional(),
};

export const podSecurityContextOverride = z.strictObject({
  ...identity,
  fsGroup: z.number().int().min(0).nullable().optional(),
  fsGroupChangePolicy: z.enum(['OnRootMismatch', 'Always']).nullable().optional(),
  supplementalGroups: z.array(z.number().int().min(0)).nullable().optional(),
});

export const containerSecurityContextOverride = z.strictObject(identity);

export type PodSecurityContextOverride = z.output<typeof podSecurityContextOverride>;
export type ContainerSecurityContextOverride = z.output<typeof containerSecurityContextOverride>;
