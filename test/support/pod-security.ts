/**
 * Pod Security checks shared by the tests of the runner Pod builder (test/unit/operator/pod.test.ts)
 * and of the Helm chart's Pods (test/unit/chart/).
 */
import type { Pod } from '../../kube/types.ts';

/**
 * The Pod Security Standards "restricted" profile (which includes "baseline"), as the PodSecurity
 * admission plugin checks it (Kubernetes v1.25+ policy version "latest"). Returns every violation.
 */
export function restrictedViolations(pod: Pod): string[] {
  const violations: string[] = [];
  const spec = pod.spec as Pod['spec'] & Record<string, unknown>;
  // baseline: host namespaces
  for (const field of ['hostNetwork', 'hostPID', 'hostIPC'] as const) {
    if (spec[field] === true) violations.push(`spec.${field}`);
  }
  const containers = [...(spec.initContainers ?? []), ...spec.containers];
  const allowedVolumes = [
    'configMap',
    'csi',
    'downwardAPI',
    'emptyDir',
    'ephemeral',
    'persistentVolumeClaim',
    'projected',
    'secret',
  ];
  for (const volume of spec.volumes ?? []) {
    const kinds = Object.keys(volume).filter((k) => k !== 'name');
    for (const kind of kinds)
      if (!allowedVolumes.includes(kind)) violations.push(`volume ${volume.name}: ${kind}`);
  }
  const podContext = spec.securityContext ?? {};
  const sysctls = (podContext as { sysctls?: unknown[] }).sysctls;
  if (sysctls && sysctls.length > 0) violations.push('spec.securityContext.sysctls');
  const podSeccomp = podContext.seccompProfile?.type;
  if (podSeccomp !== undefined && !['RuntimeDefault', 'Localhost'].includes(podSeccomp)) {
    violations.push('spec.securityContext.seccompProfile');
  }
  if (podContext.runAsUser === 0) violations.push('spec.securityContext.runAsUser=0');
  for (const container of containers) {
    const c = container.securityContext ?? {};
    const where = `container ${container.name}`;
    if (c.privileged) violations.push(`${where}: privileged`);
    if (c.allowPrivilegeEscalation !== false)
      violations.push(`${where}: allowPrivilegeEscalation must be false`);
    const drop = c.capabilities?.drop ?? [];
    if (!drop.includes('ALL')) violations.push(`${where}: capabilities.drop must include ALL`);
    for (const added of c.capabilities?.add ?? []) {
      if (added !== 'NET_BIND_SERVICE') violations.push(`${where}: capabilities.add ${added}`);
    }
    const runAsNonRoot = c.runAsNonRoot ?? podContext.runAsNonRoot;
    if (runAsNonRoot !== true) violations.push(`${where}: runAsNonRoot must be true`);
    if ((c.runAsUser ?? podContext.runAsUser) === 0) violations.push(`${where}: runAsUser=0`);
    const seccomp = c.seccompProfile?.type ?? podSeccomp;
    if (!seccomp || !['RuntimeDefault', 'Localhost'].includes(seccomp))
      violations.push(`${where}: seccompProfile`);
    for (const port of container.ports ?? []) {
      if ((port as { hostPort?: number }).hostPort) violations.push(`${where}: hostPort`);
    }
    const procMount = (c as { procMount?: string }).procMount;
    if (procMount !== undefined && procMount !== 'Default') violations.push(`${where}: procMount`);
  }
  return violations;
}
