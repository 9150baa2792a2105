import { describe, expect, it } from 'vitest';
import { type JobAttempt, type JobFailure, JobSupervisor } from '../../../platform/supervisor.ts';

const NOW = Date.parse('2030-01-01T00:00:00.000Z');

function supervisor(settings: { maxFailures?: number; retryDelayMs?: number } = {}) {
  const lines: string[] = [];
  const jobs = new JobSupervisor({
    settings: { maxFailures: 3, retryDelayMs: 1000, ...settings },
    log: (line) => lines.push(line),
    now: () => NOW,
  });
  return { jobs, lines };
}

/** An attempt whose run is `run` and whose records are kept. */
function attemptOf<T>(run: () => Promise<T>, overrides: Partial<JobAttempt<T>> = {}) {
  const recorded: JobFailure[] = [];
  const attempt: JobAttempt<T> = {
    job: 'documentation',
    subject: 'system crm (prod)',
    failuresBefore: 0,
    run,
    record: async (failure) => {
      recorded.push(failure);
    },
    ...overrides,
  };
  return { attempt, recorded };
}

describe('an attempt on a subject', () => {
  it('answers the value of a job that succeeds and records nothing', async () => {
    const { jobs } = supervisor();
    const { attempt, recorded } = attemptOf(async () => 42);
    expect(await jobs.attempt(attempt)).toEqual({ ok: true, value: 42 });
    expect(recorded).toEqual([]);
  });

  it('catches a thrown error, records it on the subject with the time of the next attempt, and goes on', async () => {
    const { jobs, lines } = supervisor();
    const { attempt, recorded } = attemptOf(() => {
      throw new Error('connection reset');
    });
    const result = await jobs.attempt(attempt);
    expect(result.ok).toBe(false);
    expect(recorded).toEqual([
      {
        job: 'documentation',
        subject: 'system crm (prod)',
        message: 'connection reset',
        failures: 1,
        terminal: false,
        retryAt: new Date(NOW + 1000),
      },
    ]);
    expect(lines).toEqual([
      'documentation: system crm (prod) failed (1 in a row), retrying at 2030-01-01T00:00:01.000Z: connection reset',
    ]);
  });

  it('catches a rejected promise and a thrown non-error the same way', async () => {
    const { jobs } = supervisor();
    const rejected = attemptOf(() => Promise.reject(new TypeError('x is undefined')));
    const thrownText = attemptOf(() => Promise.reject('plain text'));
    await jobs.attempt(rejected.attempt);
    await jobs.attempt(thrownText.attempt);
    expect(rejected.recorded[0]?.message).toBe('x is undefined');
    expect(thrownText.recorded[0]?.message).toBe('plain text');
  });

  it('waits 4× longer after each failure in a row, at most 5 minutes', async () => {
    const { jobs } = supervisor({ maxFailures: 10, retryDelayMs: 1000 });
    expect([1, 2, 3, 4, 5, 6, 9].map((failures) => jobs.retryDelayMs(failures))).toEqual([
      1000, 4000, 16_000, 64_000, 256_000, 300_000, 300_000,
    ]);
    const { attempt, recorded } = attemptOf(() => Promise.reject(new Error('503')), { failuresBefore: 2 });
    await jobs.attempt(attempt);
    expect(recorded[0]).toMatchObject({ failures: 3, terminal: false, retryAt: new Date(NOW + 16_000) });
  });

  it('gives the subject up at the maxFailures-th failure in a row', async () => {
    const { jobs, lines } = supervisor({ maxFailures: 3 });
    const { attempt, recorded } = attemptOf(() => Promise.reject(new Error('HTTP 503')), {
      failuresBefore: 2,
    });
    await jobs.attempt(attempt);
    expect(recorded).toEqual([
      {
        job: 'documentation',
        subject: 'system crm (prod)',
        message: 'HTTP 503',
        failures: 3,
        terminal: 'exhausted',
      },
    ]);
    expect(lines[0]).toBe(
      'documentation: system crm (prod) failed 3 times in a row (KUBEGLUE_JOB_MAX_FAILURES); given up: HTTP 503',
    );
    expect(jobs.status()).toEqual([
      expect.objectContaining({ job: 'documentation', failures: 1, givenUp: 1, lastError: 'HTTP 503' }),
    ]);
  });

  it('gives up a subject that already failed maxFailures times without running it again', async () => {
    const { jobs } = supervisor({ maxFailures: 3 });
    let ran = false;
    const { attempt, recorded } = attemptOf(
      async () => {
        ran = true;
      },
      { failuresBefore: 3, lastError: 'the process stopped while processing' },
    );
    expect((await jobs.attempt(attempt)).ok).toBe(false);
    expect(ran).toBe(false);
    expect(recorded).toEqual([
      expect.objectContaining({
        message: 'the process stopped while processing',
        failures: 3,
        terminal: 'exhausted',
      }),
    ]);
  });

  it('gives up at once on an error the job calls permanent', async () => {
    const { jobs } = supervisor();
    const { attempt, recorded } = attemptOf(() => Promise.reject(new RangeError('answered HTTP 404')), {
      permanent: (error) => error instanceof RangeError,
    });
    await jobs.attempt(attempt);
    expect(recorded[0]).toMatchObject({ failures: 1, terminal: 'permanent' });
    expect(recorded[0]?.retryAt).toBeUndefined();
  });

  it('redacts the message and masks URL passwords before logging or recording it', async () => {
    const { jobs, lines } = supervisor();
    const { attempt, recorded } = attemptOf(
      () =>
        Promise.reject(
          new Error('connect postgres://app:hunter22@db:5432/crm failed; token sk_live_123456 refused'),
        ),
      { redact: (text) => text.replaceAll('sk_live_123456', '<<crm_apiKey>>') },
    );
    await jobs.attempt(attempt);
    const expected = 'connect postgres://***@db:5432/crm failed; token <<crm_apiKey>> refused';
    expect(recorded[0]?.message).toBe(expected);
    expect(lines.join('\n')).not.toMatch(/hunter22|sk_live_123456/);
    expect(lines[0]).toContain(expected);
    expect(JSON.stringify(jobs.status())).not.toMatch(/hunter22|sk_live_123456/);
  });

  it('cuts long messages', async () => {
    const { jobs } = supervisor();
    const { attempt, recorded } = attemptOf(() => Promise.reject(new Error('x'.repeat(10_000))));
    await jobs.attempt(attempt);
    expect(recorded[0]?.message).toHaveLength(2001);
  });

  it('survives a subject whose record fails, and says so', async () => {
    const { jobs, lines } = supervisor();
    const result = await jobs.attempt({
      job: 'outbox',
      subject: 'outbox row 7',
      failuresBefore: 0,
      run: () => Promise.reject(new Error('handler failed')),
      record: () => Promise.reject(new Error('database is gone')),
    });
    expect(result.ok).toBe(false);
    expect(lines[1]).toBe('outbox: recording the failure of outbox row 7 failed: database is gone');
  });
});

/** A promise and its resolver. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

describe('a periodic job', () => {
  it('runs at start and on every trigger; a failed run neither stops it nor escapes', async () => {
    const { jobs, lines } = supervisor({ maxFailures: 2 });
    const outcomes = ['fail', 'fail', 'ok', 'fail'];
    let finished = deferred();
    const sweep = jobs.every({
      job: 'retention',
      intervalMs: 3_600_000,
      run: async () => {
        const outcome = outcomes.shift();
        finished.resolve();
        if (outcome === 'fail') throw new Error('database is read-only');
      },
    });
    const next = async () => {
      await finished.promise;
      // The run's promise chain (status, log) settles after the run itself.
      await new Promise((resolve) => setImmediate(resolve));
      finished = deferred();
    };
    await next();
    expect(jobs.status()).toEqual([
      expect.objectContaining({ job: 'retention', consecutiveFailures: 1, failures: 1 }),
    ]);
    sweep.trigger();
    await next();
    expect(jobs.status()[0]).toMatchObject({ consecutiveFailures: 2, failures: 2 });
    expect(lines).toContain(
      'retention: failed 2 times in a row (KUBEGLUE_JOB_MAX_FAILURES); it keeps its schedule, and ' +
        'kubeglue_background_job_consecutive_failures shows it until a run succeeds',
    );
    sweep.trigger();
    await next();
    expect(jobs.status()[0]).toMatchObject({ consecutiveFailures: 0, failures: 2 });
    expect(lines).toContain('retention: succeeded again after 2 failed run(s)');
    sweep.trigger();
    await next();
    expect(jobs.status()[0]).toMatchObject({ consecutiveFailures: 1, failures: 3 });
    await jobs.stop();
  });

  it('runs once more after the run under way when triggered during it, not once per trigger', async () => {
    const { jobs } = supervisor();
    const gate = deferred();
    let runs = 0;
    const claimed = deferred();
    const loop = jobs.every({
      job: 'outbox',
      intervalMs: 3_600_000,
      run: async () => {
        runs += 1;
        if (runs === 1) await gate.promise;
        if (runs === 2) claimed.resolve();
      },
    });
    loop.trigger();
    loop.trigger();
    loop.trigger();
    expect(runs).toBe(1);
    gate.resolve();
    await claimed.promise;
    await loop.stop();
    expect(runs).toBe(2);
  });

  it('aborts its signal on stop and waits for the run under way', async () => {
    const { jobs, lines } = supervisor();
    const started = deferred();
    let sawAbort = false;
    const sweep = jobs.every({
      job: 'retention',
      intervalMs: 3_600_000,
      run: async (signal) => {
        started.resolve();
        await new Promise((resolve) => signal.addEventListener('abort', resolve));
        sawAbort = true;
        throw new Error('stopped between batches');
      },
    });
    await started.promise;
    await sweep.stop();
    expect(sawAbort).toBe(true);
    // A run ended by the stop is no failure.
    expect(lines).toEqual([]);
    sweep.trigger();
    expect(jobs.status()[0]).toMatchObject({ failures: 0 });
  });
});
