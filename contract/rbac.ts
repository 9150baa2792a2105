/**
 * What each kubeglue role may do on the Kubernetes API: the one source for the Roles the Helm chart
 * renders, and for the test that checks every request the components made during the suite is
 * covered. The runner role has no entry: runner Pods get no service-account token at all.
 */
import { GROUP } from './resources/meta.ts';

export interface PolicyRule {
  apiGroups: string[];
  /** Plural names, `<plural>/<subresource>` for subresources. */
  resources: string[];
  verbs: string[];
}

export type RbacRole = 'api' | 'operator';

const KUBEGLUE = GROUP;
const READ = ['get', 'list', 'watch'];

export const RBAC: Record<RbacRole, PolicyRule[]> = {
  // REST writes Tools, Systems and ToolSchedules, keeps System credentials in Secrets it owns, and sets
  // ToolRun spec.cancel; async runs become ToolRuns through the operator's outbox, not here.
  api: [
    {
      apiGroups: [KUBEGLUE],
      resources: ['tools', 'systems', 'toolschedules'],
      verbs: [...READ, 'create', 'update', 'patch', 'delete'],
    },
    { apiGroups: [KUBEGLUE], resources: ['toolruns'], verbs: [...READ, 'patch'] },
    { apiGroups: [''], resources: ['secrets'], verbs: [...READ, 'create', 'update', 'patch', 'delete'] },
  ],
  // Reconciles Tools, Systems, ToolSchedules and ToolRuns, creates runner Pods and their token Secrets,
  // records Events, and holds the leader Lease.
  operator: [
    { apiGroups: [KUBEGLUE], resources: ['tools', 'systems', 'toolschedules'], verbs: READ },
    {
      apiGroups: [KUBEGLUE],
      resources: ['tools/status', 'systems/status', 'toolschedules/status'],
      verbs: ['get', 'update', 'patch'],
    },
    {
      apiGroups: [KUBEGLUE],
      resources: ['toolruns'],
      verbs: [...READ, 'create', 'update', 'patch', 'delete'],
    },
    { apiGroups: [KUBEGLUE], resources: ['toolruns/status'], verbs: ['get', 'update', 'patch'] },
    { apiGroups: [''], resources: ['pods'], verbs: [...READ, 'create', 'delete'] },
    { apiGroups: [''], resources: ['secrets'], verbs: [...READ, 'create', 'update', 'patch', 'delete'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'update'] },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['get', 'create', 'update', 'patch'],
    },
  ],
};

/** Whether `role` may do `verb` on `resource` (`plural` or `plural/subresource`) of `apiGroup`. */
export function allows(role: RbacRole, apiGroup: string, resource: string, verb: string): boolean {
  return RBAC[role].some(
    (rule) =>
      rule.apiGroups.includes(apiGroup) && rule.resources.includes(resource) && rule.verbs.includes(verb),
  );
}
