import type { ObjectMeta } from '../contract/resources/meta.ts';

/**
 * Wire types of the core Kubernetes objects kubeglue reads and writes, in the API server's JSON form: only the
 * fields we use. Optional everywhere the API server may leave a field out; times are RFC 3339 strings.
 */

export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

// --- Secret (v1) ---

export interface Secret {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: ObjectMeta;
  type?: string;
  /** Values are base64. */
  data?: Record<string, string>;
  /** Write-only convenience: plain values the API server merges into data. */
  stringData?: Record<string, string>;
  immutable?: boolean;
}

// --- Lease (coordination.k8s.io/v1) ---

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  /** MicroTime: RFC 3339 with exactly six fractional digits (see microTime()). */
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: ObjectMeta;
  spec: LeaseSpec;
}

/** A MicroTime as the API server expects it (v1.20 refuses other precisions). */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

// --- Event (core v1) ---

export interface EventSource {
  component?: string;
  host?: string;
}

export interface Event {
  apiVersion: 'v1';
  kind: 'Event';
  metadata: ObjectMeta;
  involvedObject: ObjectReference;
  reason?: string;
  message?: string;
  type?: 'Normal' | 'Warning';
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  /** MicroTime. */
  eventTime?: string;
  source?: EventSource;
  reportingComponent?: string;
  reportingInstance?: string;
  action?: string;
  related?: ObjectReference;
}

// --- Pod (v1) ---

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    configMapKeyRef?: { name: string; key: string; optional?: boolean };
    fieldRef?: { fieldPath: string; apiVersion?: string };
  };
}

export interface ResourceRequirements {
  limits?: Record<string, string>;
  requests?: Record<string, string>;
}

export interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  runAsGroup?: number;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  privileged?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: { type: string; localhostProfile?: string };
  seLinuxOptions?: SELinuxOptions;
}

export interface SELinuxOptions {
  user?: string;
  role?: string;
  type?: string;
  level?: string;
}

export interface PodSecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  runAsGroup?: number;
  fsGroup?: number;
  fsGroupChangePolicy?: string;
  supplementalGroups?: number[];
  seccompProfile?: { type: string; localhostProfile?: string };
  seLinuxOptions?: SELinuxOptions;
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
}

export interface Volume {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: string };
  secret?: { secretName: string; items?: { key: string; path: string }[]; defaultMode?: number };
  configMap?: { name: string; items?: { key: string; path: string }[]; defaultMode?: number };
}

export interface Container {
  name: string;
  image: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVar[];
  envFrom?: { secretRef?: { name: string }; configMapRef?: { name: string }; prefix?: string }[];
  ports?: { name?: string; containerPort: number; protocol?: string }[];
  resources?: ResourceRequirements;
  volumeMounts?: VolumeMount[];
  securityContext?: SecurityContext;
  terminationMessagePath?: string;
  terminationMessagePolicy?: 'File' | 'FallbackToLogsOnError';
}

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  activeDeadlineSeconds?: number;
  terminationGracePeriodSeconds?: number;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  enableServiceLinks?: boolean;
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: Toleration[];
  /** Node, Pod and anti-affinity terms, as the API server reads them. */
  affinity?: { nodeAffinity?: unknown; podAffinity?: unknown; podAntiAffinity?: unknown };
  priorityClassName?: string;
  dnsPolicy?: string;
  hostname?: string;
  securityContext?: PodSecurityContext;
  volumes?: Volume[];
  imagePullSecrets?: { name: string }[];
}

export interface ContainerStateWaiting {
  reason?: string;
  message?: string;
}

export interface ContainerStateRunning {
  startedAt?: string;
}

export interface ContainerStateTerminated {
  exitCode: number;
  signal?: number;
  /** E.g. Completed, Error, OOMKilled. */
  reason?: string;
  /** The termination message (the file at terminationMessagePath). */
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  containerID?: string;
}

export interface ContainerState {
  waiting?: ContainerStateWaiting;
  running?: ContainerStateRunning;
  terminated?: ContainerStateTerminated;
}

export interface ContainerStatus {
  name: string;
  ready: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID?: string;
  started?: boolean;
  state?: ContainerState;
  lastState?: ContainerState;
}

export interface PodCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastProbeTime?: string | null;
  lastTransitionTime?: string;
}

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

export interface PodStatus {
  phase?: PodPhase;
  conditions?: PodCondition[];
  /** E.g. Evicted, DeadlineExceeded. */
  reason?: string;
  message?: string;
  hostIP?: string;
  podIP?: string;
  startTime?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
  qosClass?: string;
  nominatedNodeName?: string;
}

export interface Pod {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: ObjectMeta;
  spec: PodSpec;
  status?: PodStatus;
}
