/** Settings of the Kubernetes roles (`kubeglue api`, `kubeglue operator`); the embedded deployment reads the Pod name too. */
import { hostname } from 'node:os';
import { port, positiveInt, text } from './schemas.ts';
import { section, setting } from './setting.ts';

const BOTH = ['api', 'operator'] as const;

export const CLUSTER = section(
  'Kubernetes roles',
  'How `kubeglue api` and `kubeglue operator` reach the API server, the ports beside the /v1 API, who ' +
    'they are and how the operator replicas elect their leader.',
  {
    kubeconfig: setting(
      'KUBEGLUE_KUBECONFIG',
      text.optional(),
      undefined,
      BOTH,
      'a kubeconfig file (unset: in-cluster, else $KUBECONFIG or ~/.kube/config)',
    ),
    kubeContext: setting(
      'KUBEGLUE_KUBE_CONTEXT',
      text.optional(),
      undefined,
      BOTH,
      'the kubeconfig context to use',
    ),
    podName: setting(
      'KUBEGLUE_POD_NAME',
      text.optional().transform((value) => value ?? hostname()),
      undefined,
      ['embedded', ...BOTH],
      "this process's identity in executor ids and the leader Lease, and the replica named with the gateway tunnels it holds (GET /v1/gateways); set it from the downward API (unset: the host name)",
    ),
    internalHost: setting(
      'KUBEGLUE_INTERNAL_HOST',
      text.optional(),
      undefined,
      ['api'],
      'address of the internal runner port (per-run tokens only; expose it to runner Pods, nothing else; unset: KUBEGLUE_HOST)',
    ),
    internalPort: setting(
      'KUBEGLUE_INTERNAL_PORT',
      port,
      '8081',
      ['api'],
      'port of the internal runner port',
    ),
    internalBodyLimitBytes: setting(
      'KUBEGLUE_INTERNAL_BODY_LIMIT_BYTES',
      positiveInt,
      String(64 * 1024 * 1024),
      ['api'],
      'largest result a runner may put',
    ),
    metricsHost: setting(
      'KUBEGLUE_METRICS_HOST',
      text.optional(),
      undefined,
      BOTH,
      'address of the metrics port (unset: KUBEGLUE_HOST)',
    ),
    metricsPort: setting(
      'KUBEGLUE_METRICS_PORT',
      port,
      // Apart, so that both roles run side by side from a checkout.
      { api: '9091', operator: '9090' },
      BOTH,
      "port of /metrics (Prometheus, no key), apart from the /v1 port so that an Ingress to the API never exposes it; the operator's /healthz too (`0`: any free port)",
    ),
    lease: {
      name: setting(
        'KUBEGLUE_LEASE_NAME',
        text,
        'kubeglue-operator',
        ['operator'],
        'name of the leader Lease',
      ),
      durationMs: setting(
        'KUBEGLUE_LEASE_DURATION_MS',
        positiveInt,
        '15000',
        ['operator'],
        'how long a leader holds the Lease without renewing it (as client-go)',
      ),
      renewDeadlineMs: setting(
        'KUBEGLUE_LEASE_RENEW_DEADLINE_MS',
        positiveInt,
        '10000',
        ['operator'],
        'a leader that could not renew for this long steps down; shorter than KUBEGLUE_LEASE_DURATION_MS',
      ),
      retryMs: setting(
        'KUBEGLUE_LEASE_RETRY_MS',
        positiveInt,
        '2000',
        ['operator'],
        'how often candidates try to acquire, and the leader to renew, the Lease',
      ),
    },
  },
);
