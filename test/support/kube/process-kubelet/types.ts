/**
 * The part of the core/v1 JSON the process kubelet reads and writes. Plain JSON shapes (timestamps
 * are RFC 3339 strings), not @kubernetes/client-node's classes, because we speak raw JSON to the
 * API server. The pod status shapes are kubeglue's own (kube/types.ts): the kubelet writes what the
 * operator reads.
 */
import type {
  ContainerStatus as ApiContainerStatus,
  PodStatus as ApiPodStatus,
} from '../../../../kube/types.ts';

export type {
  ContainerState,
  ContainerStateTerminated,
  ContainerStateWaiting,
  PodCondition,
  PodPhase,
} from '../../../../kube/types.ts';

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

/** What the kubelet writes for a container: its state and last state always (kube/types.ts has the rest). */
export type ContainerStatus = ApiContainerStatus & Required<Pick<ApiContainerStatus, 'state' | 'lastState'>>;

/** The pod status the kubelet writes: kube/types.ts's, with the pod's IPs and its own container statuses. */
export type PodStatus = Omit<ApiPodStatus, 'initContainerStatuses' | 'containerStatuses'> & {
  podIPs?: { ip: string }[];
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
};

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
