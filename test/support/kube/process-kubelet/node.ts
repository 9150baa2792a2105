import { availableParallelism, totalmem } from 'node:os';
import { isKubeApiError, type KubeApi } from './api.ts';
import { type KubeNode, kubeTime, type NodeCondition } from './types.ts';

export const NODE_IP = '127.0.0.1';

/** Lease timestamps are MicroTime: six fractional digits. */
function microTime(date = new Date()): string {
  return date.toISOString().replace(/Z$/, '000Z');
}

/**
 * The Node object of the process kubelet: registers it, then posts a Ready=True heartbeat (Node
 * status plus the kube-node-lease Lease, the two signals the node lifecycle controller watches)
 * every `heartbeatMs`. `pause()` stops the heartbeat so the node goes stale like a lost machine.
 */
export class NodeAgent {
  readonly #api: KubeApi;
  readonly #name: string;
  readonly #heartbeatMs: number;
  readonly #log: (line: string) => void;
  #timer: NodeJS.Timeout | undefined;
  #uid = '';
  #readySince = kubeTime();
  #paused = false;
  #stopped = false;
  #beat: Promise<void> = Promise.resolve();

  constructor(api: KubeApi, name: string, heartbeatMs: number, log: (line: string) => void) {
    this.#api = api;
    this.#name = name;
    this.#heartbeatMs = heartbeatMs;
    this.#log = log;
  }

  get name(): string {
    return this.#name;
  }

  async start(): Promise<void> {
    const node: KubeNode = {
      metadata: {
        name: this.#name,
        labels: {
          'kubernetes.io/hostname': this.#name,
          'kubernetes.io/os': 'linux',
          'kubernetes.io/arch': process.arch === 'x64' ? 'amd64' : process.arch,
          'kubeglue.test/process-kubelet': 'true',
        },
      },
      spec: {},
    };
    for (let attempt = 0; !this.#uid; attempt++) {
      try {
        const created = await this.#api.request<KubeNode>('POST', '/api/v1/nodes', { body: node });
        this.#uid = created.metadata.uid ?? '';
      } catch (error) {
        if (attempt >= 5 || !isKubeApiError(error)) throw error;
        try {
          // Left over from an earlier kubelet of the same name: adopt it.
          this.#uid = (await this.#api.get<KubeNode>(`/api/v1/nodes/${this.#name}`)).metadata.uid ?? '';
        } catch (readError) {
          if (!isKubeApiError(readError, 404)) throw readError;
        }
      }
    }
    await this.#heartbeat();
    this.#schedule();
  }

  #schedule(): void {
    if (this.#stopped || this.#paused) return;
    this.#timer = setTimeout(() => {
      this.#beat = this.#heartbeat().finally(() => this.#schedule());
    }, this.#heartbeatMs);
    this.#timer.unref();
  }

  /** Stops heartbeating (node lost): the lifecycle controller marks the node Unknown after its grace. */
  pause(): void {
    this.#paused = true;
    clearTimeout(this.#timer);
  }

  async resume(): Promise<void> {
    if (!this.#paused) return;
    this.#paused = false;
    this.#readySince = kubeTime();
    await this.#heartbeat();
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#beat;
  }

  #conditions(now: string): NodeCondition[] {
    const healthy = (type: string, reason: string, message: string): NodeCondition => ({
      type,
      status: 'False',
      reason,
      message,
      lastHeartbeatTime: now,
      lastTransitionTime: this.#readySince,
    });
    return [
      healthy('MemoryPressure', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
      healthy('DiskPressure', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
      healthy('PIDPressure', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
      {
        type: 'Ready',
        status: 'True',
        reason: 'KubeletReady',
        message: 'process kubelet is posting ready status',
        lastHeartbeatTime: now,
        lastTransitionTime: this.#readySince,
      },
    ];
  }

  async #heartbeat(): Promise<void> {
    if (this.#stopped || this.#paused) return;
    const now = kubeTime();
    const capacity = {
      cpu: String(availableParallelism()),
      memory: `${Math.floor(totalmem() / 1024)}Ki`,
      pods: '110',
      'ephemeral-storage': '100Gi',
    };
    try {
      // Strategic merge: conditions merge by type, so we never fight the lifecycle controller's writes.
      await this.#api.request('PATCH', `/api/v1/nodes/${this.#name}/status`, {
        contentType: 'application/strategic-merge-patch+json',
        body: {
          status: {
            conditions: this.#conditions(now),
            addresses: [
              { type: 'InternalIP', address: NODE_IP },
              { type: 'Hostname', address: this.#name },
            ],
            capacity,
            allocatable: capacity,
            daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
            nodeInfo: {
              machineID: '',
              systemUUID: '',
              bootID: '',
              kernelVersion: '',
              osImage: 'process-kubelet',
              containerRuntimeVersion: `process://${process.version}`,
              kubeletVersion: 'v1.20.2-process',
              kubeProxyVersion: '',
              operatingSystem: 'linux',
              architecture: process.arch === 'x64' ? 'amd64' : process.arch,
            },
          },
        },
      });
      await this.#renewLease();
    } catch (error) {
      this.#log(`node heartbeat failed: ${(error as Error).message}`);
    }
  }

  async #renewLease(): Promise<void> {
    const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${this.#name}`;
    const spec = { holderIdentity: this.#name, leaseDurationSeconds: 40, renewTime: microTime() };
    try {
      await this.#api.request('PATCH', path, { contentType: 'application/merge-patch+json', body: { spec } });
    } catch (error) {
      if (!isKubeApiError(error, 404)) throw error;
      await this.#api.request('POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: {
            name: this.#name,
            ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: this.#name, uid: this.#uid }],
          },
          spec,
        },
      });
    }
  }
}
