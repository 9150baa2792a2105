import { hostname } from 'node:os';
import { z } from 'zod';
import { formatIssues } from '../contract/format-issues.ts';

const port = z.coerce.number().int().min(0).max(65_535);
const positiveInt = z.coerce.number().int().positive();

/**
 * Settings only the Kubernetes roles (`kubeglue api`, `kubeglue operator`) read, beside the shared
 * ones of config/config.ts (documented in the README, "Run on Kubernetes").
 */
const ClusterSettings = z.object({
  KUBEGLUE_KUBECONFIG: z.string().min(1).optional(),
  KUBEGLUE_KUBE_CONTEXT: z.string().min(1).optional(),
  KUBEGLUE_INTERNAL_HOST: z.string().min(1).optional(),
  KUBEGLUE_INTERNAL_PORT: port.default(8081),
  KUBEGLUE_INTERNAL_BODY_LIMIT_BYTES: positiveInt.default(64 * 1024 * 1024),
  KUBEGLUE_METRICS_HOST: z.string().min(1).optional(),
  KUBEGLUE_METRICS_PORT: port.default(9090),
  KUBEGLUE_POD_NAME: z.string().min(1).optional(),
  KUBEGLUE_LEASE_NAME: z.string().min(1).default('kubeglue-operator'),
  KUBEGLUE_LEASE_DURATION_MS: positiveInt.default(15_000),
  KUBEGLUE_LEASE_RENEW_DEADLINE_MS: positiveInt.default(10_000),
  KUBEGLUE_LEASE_RETRY_MS: positiveInt.default(2_000),
});

export interface ClusterConfig {
  /** A kubeconfig file; else in-cluster (service account), else $KUBECONFIG or ~/.kube/config. */
  kubeconfig: string | undefined;
  kubeContext: string | undefined;
  /** The internal runner port of `kubeglue api` (per-run tokens only). */
  internalHost: string | undefined;
  internalPort: number;
  internalBodyLimitBytes: number;
  /** `/metrics` and `/healthz` of `kubeglue operator`. */
  metricsHost: string | undefined;
  metricsPort: number;
  /** Who this process is: in executor ids and the leader Lease's holderIdentity. */
  podName: string;
  lease: { name: string; durationMs: number; renewDeadlineMs: number; retryMs: number };
}

export function loadClusterConfig(env: NodeJS.ProcessEnv = process.env): ClusterConfig {
  const parsed = ClusterSettings.safeParse(env);
  if (!parsed.success) throw new Error(`invalid configuration: ${formatIssues(parsed.error)}`);
  const c = parsed.data;
  if (c.KUBEGLUE_LEASE_RENEW_DEADLINE_MS >= c.KUBEGLUE_LEASE_DURATION_MS) {
    throw new Error(
      'invalid configuration: KUBEGLUE_LEASE_RENEW_DEADLINE_MS must be shorter than KUBEGLUE_LEASE_DURATION_MS',
    );
  }
  return {
    kubeconfig: c.KUBEGLUE_KUBECONFIG,
    kubeContext: c.KUBEGLUE_KUBE_CONTEXT,
    internalHost: c.KUBEGLUE_INTERNAL_HOST,
    internalPort: c.KUBEGLUE_INTERNAL_PORT,
    internalBodyLimitBytes: c.KUBEGLUE_INTERNAL_BODY_LIMIT_BYTES,
    metricsHost: c.KUBEGLUE_METRICS_HOST,
    metricsPort: c.KUBEGLUE_METRICS_PORT,
    podName: c.KUBEGLUE_POD_NAME ?? hostname(),
    lease: {
      name: c.KUBEGLUE_LEASE_NAME,
      durationMs: c.KUBEGLUE_LEASE_DURATION_MS,
      renewDeadlineMs: c.KUBEGLUE_LEASE_RENEW_DEADLINE_MS,
      retryMs: c.KUBEGLUE_LEASE_RETRY_MS,
    },
  };
}
