import type { Registry } from 'prom-client';
import { type Sample, scrapedCounter, scrapedGauge } from './metrics.ts';
import type { JobStatus } from './supervisor.ts';

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
  const perJob = (value: (job: JobStatus) => number) => () =>
    status().map((job): Sample<'job'> => [{ job: job.job }, value(job)]);
  scrapedCounter(
    registry,
    {
      name: `${prefix}background_job_failures_total`,
      help: 'Failed attempts of background jobs (documentation, outbox, retention, sweeps), by job',
      labelNames: ['job'],
    },
    perJob((job) => job.failures),
  );
  scrapedCounter(
    registry,
    {
      name: `${prefix}background_job_given_up_total`,
      help: 'Subjects given up after KUBEGLUE_JOB_MAX_FAILURES failures in a row or a permanent failure, by job',
      labelNames: ['job'],
    },
    perJob((job) => job.givenUp),
  );
  scrapedGauge(
    registry,
    {
      name: `${prefix}background_job_consecutive_failures`,
      help: 'Periodic jobs: failed runs in a row (0 once a run succeeds)',
      labelNames: ['job'],
    },
    perJob((job) => job.consecutiveFailures),
  );
}
