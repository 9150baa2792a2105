import { isKubeApiError, type KubeApi } from './api.ts';
import { kubeTime, type Pod } from './types.ts';

const podPath = (pod: Pod) =>
  `/api/v1/namespaces/${pod.metadata.namespace ?? 'default'}/pods/${pod.metadata.name}`;

/**
 * Binds a Pod to the node through the pods/binding subresource, as the scheduler does; the API
 * server then sets spec.nodeName and PodScheduled=True. 'gone' when the Pod no longer exists;
 * 'retry' on a 409, which is either a lost race (the watch will show the Pod bound, and a retry
 * then does nothing) or a conflict worth retrying.
 */
export async function bindPod(api: KubeApi, pod: Pod, nodeName: string): Promise<'bound' | 'gone' | 'retry'> {
  try {
    await api.request('POST', `${podPath(pod)}/binding`, {
      body: {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid },
        target: { apiVersion: 'v1', kind: 'Node', name: nodeName },
      },
    });
    return 'bound';
  } catch (error) {
    if (isKubeApiError(error, 404)) return 'gone';
    if (isKubeApiError(error, 409)) return 'retry';
    throw error;
  }
}

/** What the scheduler writes for a Pod that fits no node: PodScheduled=False, reason Unschedulable. */
export async function markUnschedulable(api: KubeApi, pod: Pod): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await api.get<Pod>(podPath(pod));
    if (current.metadata.uid !== pod.metadata.uid || current.spec.nodeName) return;
    const conditions = (current.status?.conditions ?? []).filter((c) => c.type !== 'PodScheduled');
    conditions.push({
      type: 'PodScheduled',
      status: 'False',
      reason: 'Unschedulable',
      message: '0/1 nodes are available: 1 node(s) were unschedulable.',
      lastProbeTime: null,
      lastTransitionTime: kubeTime(),
    });
    try {
      await api.request('PUT', `${podPath(pod)}/status`, {
        body: { ...current, status: { ...current.status, phase: 'Pending', conditions } },
      });
      return;
    } catch (error) {
      if (isKubeApiError(error, 404)) return;
      if (!isKubeApiError(error, 409)) throw error;
    }
  }
}

/** Deletes a Pod for good once its containers are gone, as the kubelet does: grace 0, same UID only. */
export async function deletePodNow(api: KubeApi, pod: Pod): Promise<void> {
  try {
    await api.request('DELETE', podPath(pod), {
      body: {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        gracePeriodSeconds: 0,
        preconditions: { uid: pod.metadata.uid },
      },
    });
  } catch (error) {
    // Gone already, or a new Pod of the same name (UID precondition): nothing of ours to delete.
    if (!isKubeApiError(error, 404) && !isKubeApiError(error, 409)) throw error;
  }
}
