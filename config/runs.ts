/** Settings of async runs, completion effects, retention and background jobs (the operator loops). */
import { z } from 'zod';
import { bool, duration, millisecondsList, positiveInt } from './schemas.ts';
import { SERVER_ROLES, section, setting } from './setting.ts';

/** The operator loops: in the embedded process, or in the elected operator on Kubernetes. */
const LOOPS = ['embedded', 'operator'] as const;

export const RUNS = section(
  'Async runs, completion and retention',
  'Admission of async runs, what happens when one is lost, completion notifications, how long records ' +
    'are kept, and the supervisor of background jobs (documentation processing, outbox delivery, ' +
    'retention, the sweeps and prunes), whose failures are recorded, never fatal ' +
    '([background jobs](security.md#background-jobs)). What a shutdown does to runs in flight: ' +
    '[the decisions](api-decisions.md).',
  {
    maxAsyncRuns: setting(
      'KUBEGLUE_MAX_ASYNC_RUNS',
      positiveInt,
      '64',
      LOOPS,
      'asynchronous runs executing at once; more wait (on Kubernetes: Admitted=False, AdmissionLimit), admitted in creation order',
    ),
    maxAsyncRunsPerNamespace: setting(
      'KUBEGLUE_MAX_ASYNC_RUNS_PER_NAMESPACE',
      positiveInt.optional(),
      undefined,
      ['operator'],
      'asynchronous runs executing at once per namespace (unset: only the global limit)',
    ),
    maxRunAttempts: setting(
      'KUBEGLUE_MAX_RUN_ATTEMPTS',
      positiveInt,
      '3',
      LOOPS,
      'executions a read-only async run (every step modify: false) gets at most when one is lost: a shutdown past the grace period, a crash, a runner Pod deleted, evicted or its node gone; beyond it the run fails saying how many attempts were made. A run that modifies data is never retried',
    ),
    toolRunRetentionMs: setting(
      'KUBEGLUE_TOOLRUN_RETENTION_MS',
      positiveInt,
      String(60 * 60 * 1000),
      LOOPS,
      'finished ToolRun objects (and their Pods) are deleted after this; the run record stays in the store',
    ),
    outboxRetentionMs: setting(
      'KUBEGLUE_OUTBOX_RETENTION_MS',
      positiveInt,
      String(7 * 24 * 60 * 60 * 1000),
      LOOPS,
      'delivered or abandoned completion effects (notifications, chains, starts) are deleted after this',
    ),
    runRetentionMs: setting(
      'KUBEGLUE_RUN_RETENTION',
      duration,
      '30d',
      LOOPS,
      'ended runs that started longer ago than this are deleted, with their results, step results and files (ms, s, m, h, d; 0 keeps them forever); runs still running are never deleted',
    ),
    resultRetentionMs: setting(
      'KUBEGLUE_RESULT_RETENTION',
      duration.optional().transform((value) => value ?? 0),
      undefined,
      LOOPS,
      'results, step results and files stored longer ago than this are deleted earlier; the run record stays and its result then reads as absent (unset: as long as the run)',
    ),
    notifyAllowPrivate: setting(
      'KUBEGLUE_NOTIFY_ALLOW_PRIVATE',
      bool,
      'false',
      LOOPS,
      'allow completion notifications to loopback, private and link-local addresses (development, tests)',
    ),
    notifyRetryDelaysMs: setting(
      'KUBEGLUE_NOTIFY_RETRY_DELAYS_MS',
      millisecondsList,
      '5000,30000,120000,600000,3600000',
      LOOPS,
      'waits between notification attempts (the last repeats, for up to 24 h)',
    ),
    notifySecret: setting(
      'KUBEGLUE_NOTIFY_SECRET',
      z.string().min(24, 'must be at least 24 characters').optional(),
      undefined,
      LOOPS,
      'signing secret of completion notifications (whsec_<base64> or 24+ characters); set it to verify signatures (unset: derived from the master key)',
    ),
    jobs: {
      maxFailures: setting(
        'KUBEGLUE_JOB_MAX_FAILURES',
        positiveInt,
        '5',
        SERVER_ROLES,
        "a background job's subject (a documentation request, an outbox row) that failed this many times in a row is given up: it shows a terminal status and is not retried until a user acts",
      ),
      retryDelayMs: setting(
        'KUBEGLUE_JOB_RETRY_DELAY_MS',
        positiveInt,
        '1000',
        SERVER_ROLES,
        'wait before a failed background job is tried again; 4× longer after each further failure, at most 5 minutes',
      ),
    },
  },
);
