/**
 * config/: the settings of every role, read from KUBEGLUE_* environment variables and validated once.
 *
 * May import: contract, engine, kube, systems, api. (Until the one settings registry lands: then contract only.)
 */
import { resolve } from 'node:path';
import { z } from 'zod';
import { formatIssues } from '../contract/format-issues.ts';
import { type EgressPolicy, parseEgressList } from '../engine/protocols/egress-policy.ts';
import { DEFAULT_LIMITS } from '../engine/types.ts';
import type { SupervisorSettings } from '../kube/supervisor.ts';
import { type DocumentationLimits, documentationLimitsFromEnv } from './documentation.ts';

const port = z.coerce.number().int().min(0).max(65_535);
const positiveInt = z.coerce.number().int().positive();

const DURATION_UNITS_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A duration such as `30d`, `12h`, `90m`, `45s`, `500ms`, or `0` (off); in milliseconds. */
const duration = z
  .string()
  .trim()
  .regex(/^(0|\d+(ms|s|m|h|d))$/, 'a duration such as 30d, 12h, 90m, 45s or 500ms, or 0 for off')
  .transform((text) => {
    const match = /^(\d+)(ms|s|m|h|d)?$/.exec(text);
    const unit = (match?.[2] ?? 'ms') as keyof typeof DURATION_UNITS_MS;
    return Number(match?.[1] ?? 0) * DURATION_UNITS_MS[unit];
  });

/** Every knob of the server, read from `KUBEGLUE_*` environment variables (documented in the README). */
export const ServerConfig = z.object({
  KUBEGLUE_HOST: z.string().min(1).default('127.0.0.1'),
  KUBEGLUE_PORT: port.default(8080),
  KUBEGLUE_DATA_DIR: z.string().min(1).default('./.kubeglue'),
  KUBEGLUE_DATABASE_URL: z.url().optional(),
  KUBEGLUE_BODY_LIMIT_BYTES: positiveInt.default(10 * 1024 * 1024),
  KUBEGLUE_WORKERS: positiveInt.optional(),
  // An engine worker without runs for this long exits (one always stays); more start on demand.
  KUBEGLUE_WORKER_IDLE_MS: positiveInt.default(60_000),
  KUBEGLUE_SANDBOX_MEMORY_MB: positiveInt.default(128),
  KUBEGLUE_SANDBOX_TIMEOUT_MS: positiveInt.default(10_000),
  // Sandbox evaluations one API key runs at once per engine worker (engine/sandbox/fair-queue.ts).
  KUBEGLUE_SANDBOX_KEY_CONCURRENCY: positiveInt.default(2),
  // What a run may carry, as UTF-8 JSON (engine/data-size.ts).
  KUBEGLUE_MAX_STEP_DATA_BYTES: positiveInt.default(DEFAULT_LIMITS.maxStepDataBytes),
  KUBEGLUE_MAX_RESULT_BYTES: positiveInt.default(DEFAULT_LIMITS.maxResultBytes),
  KUBEGLUE_SHUTDOWN_GRACE_MS: positiveInt.default(10_000),
  // A read-only async run whose execution was lost (shutdown, crash) runs again, up to this many times.
  KUBEGLUE_MAX_RUN_ATTEMPTS: positiveInt.default(3),
  KUBEGLUE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  KUBEGLUE_ADMIN_KEY: z.string().optional(),
  KUBEGLUE_MASTER_KEY: z.string().optional(),
  KUBEGLUE_PUBLIC_URL: z.url().optional(),
  // TLS on the /v1 port (and so wss:// for gateway agents): PEM files, both or neither.
  KUBEGLUE_TLS_CERT_FILE: z.string().min(1).optional(),
  KUBEGLUE_TLS_KEY_FILE: z.string().min(1).optional(),
  KUBEGLUE_NOTIFY_ALLOW_PRIVATE: z.enum(['true', 'false']).default('false'),
  KUBEGLUE_NOTIFY_RETRY_DELAYS_MS: z
    .string()
    .regex(/^\d+(,\d+)*$/, 'a comma-separated list of milliseconds')
    .default('5000,30000,120000,600000,3600000'),
  KUBEGLUE_NOTIFY_SECRET: z.string().min(24, 'must be at least 24 characters').optional(),
  KUBEGLUE_NAMESPACE: z.string().min(1).default('default'),
  KUBEGLUE_MAX_ASYNC_RUNS: positiveInt.default(64),
  // Sync runs one API process executes at once; more are refused with 429 at once, not held.
  KUBEGLUE_MAX_SYNC_RUNS: positiveInt.default(256),
  KUBEGLUE_TOOLRUN_RETENTION_MS: positiveInt.default(60 * 60 * 1000),
  KUBEGLUE_OUTBOX_RETENTION_MS: positiveInt.default(7 * 24 * 60 * 60 * 1000),
  // Ended runs are deleted after this; their results and files may go earlier (operator/retention.ts).
  KUBEGLUE_RUN_RETENTION: duration.default(30 * DURATION_UNITS_MS.d),
  KUBEGLUE_RESULT_RETENTION: duration.optional(),
  // Steps' outbound connections (engine/protocols/egress-policy.ts). The embedded deployment allows
  // private addresses by default (on a laptop the systems are on localhost); Kubernetes roles do not.
  KUBEGLUE_EGRESS_PRIVATE: z.enum(['allow', 'deny']).optional(),
  KUBEGLUE_EGRESS_ALLOW: z.string().optional(),
  KUBEGLUE_EGRESS_DENY: z.string().optional(),
  // Background jobs (kube/supervisor.ts): a subject failing this many times in a row is given up.
  KUBEGLUE_JOB_MAX_FAILURES: positiveInt.default(5),
  KUBEGLUE_JOB_RETRY_DELAY_MS: positiveInt.default(1000),
});

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl: string | undefined;
  bodyLimitBytes: number;
  workers: number | undefined;
  /** An engine worker idle this long exits, down to one (KUBEGLUE_WORKER_IDLE_MS). */
  workerIdleMs: number;
  sandboxMemoryMb: number;
  sandboxTimeoutMs: number;
  /** Sandbox evaluations one API key runs at once per worker (KUBEGLUE_SANDBOX_KEY_CONCURRENCY). */
  sandboxKeyConcurrency: number;
  /** Largest data of one step, and result of one run, as UTF-8 JSON (KUBEGLUE_MAX_*_BYTES). */
  maxStepDataBytes: number;
  maxResultBytes: number;
  shutdownGraceMs: number;
  /** Executions a read-only async run gets at most when one is lost (runs/interrupted.ts). */
  maxRunAttempts: number;
  logLevel: string;
  adminKey: string | undefined;
  masterKey: string | undefined;
  publicUrl: string | undefined;
  /** PEM files of the /v1 port's certificate chain and key (KUBEGLUE_TLS_CERT_FILE/KEY_FILE). */
  tls: { certFile: string; keyFile: string } | undefined;
  notifyAllowPrivate: boolean;
  notifyRetryDelaysMs: number[];
  notifySecret: string | undefined;
  namespace: string;
  maxAsyncRuns: number;
  maxSyncRuns: number;
  toolRunRetentionMs: number;
  outboxRetentionMs: number;
  /** Ended runs are deleted after this (0: kept forever). */
  runRetentionMs: number;
  /** Results and files are deleted after this (0: as long as their run). */
  resultRetentionMs: number;
  /** What steps may connect to; handed to the worker pool. */
  egress: EgressPolicy;
  /** KUBEGLUE_DOCS_* (config/documentation.ts). */
  documentation: DocumentationLimits;
  /** KUBEGLUE_JOB_*: retries of background jobs (kube/supervisor.ts). */
  jobs: SupervisorSettings;
}

/** The process reading the settings: some defaults differ between the embedded and Kubernetes roles. */
export type ConfigRole = 'embedded' | 'api' | 'operator';

export function loadConfig(env: NodeJS.ProcessEnv = process.env, role: ConfigRole = 'embedded'): Config {
  const parsed = ServerConfig.safeParse(env);
  if (!parsed.success) throw new Error(`invalid configuration: ${formatIssues(parsed.error)}`);
  const c = parsed.data;
  let egress: EgressPolicy;
  try {
    egress = {
      privateDefault: c.KUBEGLUE_EGRESS_PRIVATE ?? (role === 'embedded' ? 'allow' : 'deny'),
      allow: parseEgressList(c.KUBEGLUE_EGRESS_ALLOW, 'KUBEGLUE_EGRESS_ALLOW'),
      deny: parseEgressList(c.KUBEGLUE_EGRESS_DENY, 'KUBEGLUE_EGRESS_DENY'),
    };
  } catch (error) {
    throw new Error(`invalid configuration: ${(error as Error).message}`);
  }
  if (Boolean(c.KUBEGLUE_TLS_CERT_FILE) !== Boolean(c.KUBEGLUE_TLS_KEY_FILE)) {
    throw new Error(
      'invalid configuration: KUBEGLUE_TLS_CERT_FILE and KUBEGLUE_TLS_KEY_FILE go together (set both or neither)',
    );
  }
  return {
    host: c.KUBEGLUE_HOST,
    port: c.KUBEGLUE_PORT,
    dataDir: resolve(c.KUBEGLUE_DATA_DIR),
    databaseUrl: c.KUBEGLUE_DATABASE_URL,
    bodyLimitBytes: c.KUBEGLUE_BODY_LIMIT_BYTES,
    workers: c.KUBEGLUE_WORKERS,
    workerIdleMs: c.KUBEGLUE_WORKER_IDLE_MS,
    sandboxMemoryMb: c.KUBEGLUE_SANDBOX_MEMORY_MB,
    sandboxTimeoutMs: c.KUBEGLUE_SANDBOX_TIMEOUT_MS,
    sandboxKeyConcurrency: c.KUBEGLUE_SANDBOX_KEY_CONCURRENCY,
    maxStepDataBytes: c.KUBEGLUE_MAX_STEP_DATA_BYTES,
    maxResultBytes: c.KUBEGLUE_MAX_RESULT_BYTES,
    shutdownGraceMs: c.KUBEGLUE_SHUTDOWN_GRACE_MS,
    maxRunAttempts: c.KUBEGLUE_MAX_RUN_ATTEMPTS,
    logLevel: c.KUBEGLUE_LOG_LEVEL,
    adminKey: c.KUBEGLUE_ADMIN_KEY,
    masterKey: c.KUBEGLUE_MASTER_KEY,
    publicUrl: c.KUBEGLUE_PUBLIC_URL?.replace(/\/+$/, ''),
    tls:
      c.KUBEGLUE_TLS_CERT_FILE && c.KUBEGLUE_TLS_KEY_FILE
        ? { certFile: resolve(c.KUBEGLUE_TLS_CERT_FILE), keyFile: resolve(c.KUBEGLUE_TLS_KEY_FILE) }
        : undefined,
    notifyAllowPrivate: c.KUBEGLUE_NOTIFY_ALLOW_PRIVATE === 'true',
    notifyRetryDelaysMs: c.KUBEGLUE_NOTIFY_RETRY_DELAYS_MS.split(',').map(Number),
    notifySecret: c.KUBEGLUE_NOTIFY_SECRET,
    namespace: c.KUBEGLUE_NAMESPACE,
    maxAsyncRuns: c.KUBEGLUE_MAX_ASYNC_RUNS,
    maxSyncRuns: c.KUBEGLUE_MAX_SYNC_RUNS,
    toolRunRetentionMs: c.KUBEGLUE_TOOLRUN_RETENTION_MS,
    outboxRetentionMs: c.KUBEGLUE_OUTBOX_RETENTION_MS,
    runRetentionMs: c.KUBEGLUE_RUN_RETENTION,
    resultRetentionMs: c.KUBEGLUE_RESULT_RETENTION ?? 0,
    egress,
    documentation: documentationLimitsFromEnv(env),
    jobs: { maxFailures: c.KUBEGLUE_JOB_MAX_FAILURES, retryDelayMs: c.KUBEGLUE_JOB_RETRY_DELAY_MS },
  };
}
