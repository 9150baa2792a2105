import type { Registry } from 'prom-client';
import { SETTINGS } from '../config/config.ts';
import { type Sample, scrapedMetric } from './metrics.ts';
import type { JobStatus } from './supervisor.ts';

/** Each job metric: counter or gauge, its name without the prefix, its help, and its value for a job. */
const JOB_METRICS: Array<['counter' | 'gauge', string, string, (job: JobStatus) => number]> = [
  [
    'counter',
    'background_job_failures_total',
    'Failed attempts of background jobs (documentation, outbox, retention, sweeps), by job',
    (job) => job.failures,
  ],
  [
    'counter',
    'background_job_given_up_total',
    `Subjects given up after ${SETTINGS.tree.jobs.maxFailures.name} failures in a row or a permanent failure, by job`,
    (job) => job.givenUp,
  ],
  [
    'gauge',
    'background_job_consecutive_failures',
    'Periodic jobs: failed runs in a row (0 once a run succeeds)',
    (job) => job.consecutiveFailures,
  ],
];

/**
 * The supervisor's counts on /metrics (docs/security.md, "Background jobs"): failures and subjects given up
 * per job since the process started, and the failed runs in a row of periodic jobs. Labels are job names,
 * a fixed set.
 */
export function registerJobMetrics(
  registry: Registry,
  status: () => JobStatus[],
  prefix = 'kubeglue_',
): void {
  const series = (value: (job: JobStatus) => number) => () =>
    status().map((job): Sample<'job'> => [{ job: job.job }, value(job)]);
  for (const [kind, name, help, value] of JOB_METRICS) {
    scrapedMetric(registry, kind, { name: `${prefix}${name}`, help, labelNames: ['job'] }, series(value));
  }
}
