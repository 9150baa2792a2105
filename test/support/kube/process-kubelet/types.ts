/**
 * The part of the core/v1 JSON the process kubelet reads and writes. Plain JSON shapes (timestamps
 * are RFC 3339 strings), not @kubernetes/client-node's classes, because we speak raw JSON to the
 * API server.
 */

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  creationTimestamp?: string;
  ownerReferences?: unknown[];
}

export interface KeySelector {
  name?: string;
  key: string;
  optional?: boolean;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: KeySelector;
    configMapKeyRef?: KeySelector;
    fieldRef?: { fieldPath: string };
    resourceFieldRef?: { resource: string; containerName?: string; divisor?: string };
  };
}

export interface EnvFromSource {
  prefix?: string;
  secretRef?: { name?: string; optional?: boolean };
  configMapRef?: { name?: string; optional?: boolean };
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  subPath?: string;
  readOnly?: boolean;
}

export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVar[];
  envFrom?: EnvFromSource[];
  volumeMounts?: VolumeMount[];
  resources?: { limits?: Record<string, string>; requests?: Record<string, string> };
  terminationMessagePath?: string;
  terminationMessagePolicy?: 'File' | 'FallbackToLogsOnError';
}

export interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

export interface Volume {
  name: string;
  secret?: { secretName?: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  configMap?: { name?: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  emptyDir?: Record<string, unknown>;
  [other: string]: unknown;
}

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

export interface PodSpec {
  nodeName?: string;
  restartPolicy?: RestartPolicy;
  activeDeadlineSeconds?: number;
  terminationGracePeriodSeconds?: number;
  serviceAccountName?: string;
  initContainers?: Container[];
  containers: Container[];
  volumes?: Volume[];
}

export interface PodCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastProbeTime?: string | null;
  lastTransitionTime?: string;
}

export interface ContainerStateWaiting {
  reason: string;
  message?: string;
}

export interface ContainerStateRunning {
  startedAt: string;
}

export interface ContainerStateTerminated {
  exitCode: number;
  signal?: number;
  reason: string;
  message?: string;
  startedAt?: string;
  finishedAt: string;
  containerID?: string;
}

export interface ContainerState {
  waiting?: ContainerStateWaiting;
  running?: ContainerStateRunning;
  terminated?: ContainerStateTerminated;
}

export interface ContainerStatus {
  name: string;
  state: ContainerState;
  lastState: ContainerState;
  ready: boolean;
  started?: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID?: string;
}

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

export interface PodStatus {
  phase?: PodPhase;
  reason?: string;
  message?: string;
  conditions?: PodCondition[];
  hostIP?: string;
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
  qosClass?: string;
  nominatedNodeName?: string;
}

export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: PodSpec;
  status?: PodStatus;
}

export interface Secret {
  metadata: ObjectMeta;
  data?: Record<string, string>;
}

export interface ConfigMap {
  metadata: ObjectMeta;
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

export interface NodeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
}

export interface KubeNode {
  metadata: ObjectMeta;
  spec?: Record<string, unknown>;
  status?: { conditions?: NodeCondition[]; [field: string]: unknown };
}

/** RFC 3339 with second precision: what metav1.Time stores, so our writes compare equal to reads. */
export function kubeTime(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function podKey(pod: { metadata: ObjectMeta }): string {
  return `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`;
}
