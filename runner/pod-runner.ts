/**
 * `kubeglue runner` in a runner Pod (DESIGN.md "Async run"): with nothing but its per-run token it fetches
 * the run order from the internal API, runs the engine while posting events and heartbeats (whose answers
 * may cancel the run), puts the result, leaves a summary in the termination message and exits 0 when the
 * run succeeded and its result is stored, 1 otherwise. It logs step ids, timings and statuses, never
 * credentials or payload data.
 */
import { writeFile } from 'node:fs/promises';
import type { z } from 'zod';
import type { RunnerSettings } from '../config/config.ts';
import { createLogger } from '../contract/log.ts';
import { RunOrder } from '../contract/wire/run-order.ts';
import {
  AccessTokenAnswer,
  BudgetAnswer,
  type BudgetRequest,
  encodeSummary,
  IdentityTokenAnswer,
  INTERNAL_PATHS,
  ResultAck,
  RunnerAck,
  type RunnerSummary,
} from '../contract/wire/runner.ts';
import { accessTokenHash } from '../contract/wire/token-hash.ts';
import { createEngineDeps } from '../engine/deps.ts';
import { closeGatewayAgents } from '../engine/protocols/gateway-http.ts';
import { closeHttpAgent } from '../engine/protocols/http.ts';
import { closeConnectionPools } from '../engine/protocols/index.ts';
import { leftOutAll } from '../engine/recording.ts';
import { runTool } from '../engine/run-tool.ts';
import type {
  BudgetSource,
  BudgetTicket,
  EngineEvent,
  EngineResult,
  GrantedToken,
  IdentityGrant,
} from '../engine/types.ts';
import { InternalApiError, InternalClient, withRetry } from './pod-client.ts';
import { type PodRunnerConfig, podRunnerConfig } from './pod-env.ts';
import { EventShipper } from './pod-events.ts';

type Ack = z.infer<typeof ResultAck>;
const TERMINAL = new Set<string>(['success', 'failed', 'aborted']);

const log = createLogger('runner');

/**
 * A budget answer's moment on the API's clock is used when it is this close to the wait it came with (the
 * clocks agree, the answer's way here included); otherwise the wait, from when the answer arrived.
 */
const CLOCKS_AGREE_MS = 1_000;

function failure(status: 'failed' | 'aborted', error: string): EngineResult {
  return { status, data: null, stepResults: [], error, files: [] };
}

/**
 * The abort reason of a signal from outside: the Pod is being deleted, evicted or its node drained. Not a
 * cancel (that comes in a heartbeat answer): the runner stores no result and leaves the outcome to the
 * operator, which starts a read-only run over in a new Pod and fails any other (operator/toolrun/watch.ts).
 */
class StoppedBySignal extends Error {
  constructor(signal: NodeJS.Signals) {
    super(`The runner was stopped by ${signal} before the run finished`);
    this.name = 'StoppedBySignal';
  }
}

/** The summary of a run a signal interrupted: nothing stored, the operator decides. */
function interruptedSummary(runId: string, reason: StoppedBySignal, result?: EngineResult): RunnerSummary {
  return {
    v: 1,
    runId,
    status: 'aborted',
    resultStored: false,
    interrupted: true,
    error: reason.message,
    ...(result
      ? { steps: result.stepResults.map((step) => ({ id: step.stepId, success: step.success })) }
      : {}),
  };
}

/** One run in this process; answers the exit code. */
export async function runPod(settings: RunnerSettings): Promise<number> {
  let config: PodRunnerConfig;
  try {
    config = podRunnerConfig(settings);
  } catch (error) {
    log((error as Error).message);
    return 1;
  }
  const started = Date.now();
  const client = new InternalClient({
    baseUrl: config.internalUrl,
    token: config.token,
    requestTimeoutMs: config.requestTimeoutMs,
  });
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping the run; its outcome is left to the operator`);
    stop.abort(new StoppedBySignal(signal));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  let summary: RunnerSummary;
  try {
    summary = await new PodRun(config, client, stop).execute();
  } catch (error) {
    // A bug here must still leave a summary the operator can act on.
    summary =
      stop.signal.reason instanceof StoppedBySignal
        ? interruptedSummary(config.runId, stop.signal.reason)
        : {
            v: 1,
            runId: config.runId,
            status: 'failed',
            resultStored: false,
            error: `Internal error in the runner: ${(error as Error).message}`,
          };
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await client.close();
  }
  summary.durationMs = Date.now() - started;
  try {
    await writeFile(config.terminationMessagePath, encodeSummary(summary));
  } catch (error) {
    log(`could not write the termination message: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const code = summary.status === 'success' && summary.resultStored ? 0 : 1;
  log(`run ${summary.status}, result ${summary.resultStored ? 'stored' : 'not stored'}; exit ${code}`);
  return code;
}

class PodRun {
  readonly #config: PodRunnerConfig;
  readonly #client: InternalClient;
  /** Aborts the run: SIGTERM, a cancel in an answer, or the API refusing this runner. */
  readonly #stop: AbortController;

  constructor(config: PodRunnerConfig, client: InternalClient, stop: AbortController) {
    this.#config = config;
    this.#client = client;
    this.#stop = stop;
  }

  async execute(): Promise<RunnerSummary> {
    const { runId } = this.#config;
    log(`run ${runId} attempt ${this.#config.attempt}: fetching the order`);
    const stopHeartbeats = this.#startHeartbeats();
    try {
      let result: EngineResult;
      let reachable = true;
      try {
        const order = await this.#fetchOrder();
        // The engine turns every failure of a run into a result; what escapes is this process's fault
        // (e.g. the sandbox would not start), and the run must still end with it.
        result = await this.#run(order).catch((error: unknown) =>
          failure('failed', `Internal error in the runner: ${(error as Error).message}`),
        );
      } catch (error) {
        if (!(error instanceof InternalApiError)) throw error;
        // Unreachable or failing past the budget: a result would not get through either.
        reachable = !error.retryable;
        log(`no run order: ${error.message}`);
        result = this.#stop.signal.aborted
          ? failure('aborted', 'The runner was stopped before the run started')
          : failure('failed', `Could not fetch the run order: ${error.message}`);
      }
      const signal = this.#stop.signal.reason;
      if (result.status === 'aborted' && signal instanceof StoppedBySignal) {
        log('stopped from outside: no result stored');
        return interruptedSummary(runId, signal, result);
      }
      const ack = reachable ? await this.#putResult(result) : undefined;
      return summarize(runId, result, ack);
    } finally {
      stopHeartbeats();
    }
  }

  async #fetchOrder(): Promise<RunOrder> {
    const started = Date.now();
    const order = await withRetry(
      () =>
        this.#client.call(
          'GET',
          INTERNAL_PATHS.order(this.#config.runId),
          RunOrder,
          undefined,
          this.#stop.signal,
        ),
      {
        budgetMs: this.#config.orderRetryMs,
        signal: this.#stop.signal,
        onRetry: (error, delayMs) => log(`order: ${error.message}; retrying in ${Math.round(delayMs)} ms`),
      },
    );
    if (order.runId !== this.#config.runId)
      throw new InternalApiError('the order is for another run', 200, false);
    log(`order received in ${Date.now() - started} ms: ${order.tool.steps.length} step(s)`);
    return order;
  }

  async #run(order: RunOrder): Promise<EngineResult> {
    const shipper = new EventShipper({
      attempt: this.#config.attempt,
      post: (batch) => this.#client.call('POST', INTERNAL_PATHS.events(this.#config.runId), RunnerAck, batch),
      maxBuffered: this.#config.eventBuffer,
      onStop: (reason) => this.#abort(reason),
      log,
    });
    const stepStarted = new Map<string, number>();
    const onEvent = (event: EngineEvent) => {
      if (event.type === 'step_started') {
        stepStarted.set(event.stepId, Date.now());
        log(`step ${event.stepId} started`);
      } else if (event.type === 'step_finished') {
        const { stepId, success } = event.result;
        const ms = Date.now() - (stepStarted.get(stepId) ?? Date.now());
        log(`step ${stepId} ${success ? 'succeeded' : 'failed'} in ${ms} ms`);
      }
      shipper.push(event);
    };
    const started = Date.now();
    const { deps, sandbox } = createEngineDeps(this.#config);
    let result: EngineResult;
    try {
      result = await runTool(deps, {
        ...order,
        signal: this.#stop.signal,
        onEvent,
        accessToken: (systemId, rejected) => this.#accessToken(systemId, rejected),
        identityToken: (audience) => this.#identityToken(audience),
        budget: this.#budget(),
      });
    } finally {
      sandbox.dispose();
      await Promise.allSettled([closeHttpAgent(), closeGatewayAgents(), closeConnectionPools()]);
    }
    log(`run ${result.status} in ${Date.now() - started} ms`);
    if (!(await shipper.close(this.#config.eventFlushMs))) log('some events were not delivered');
    return result;
  }

  /**
   * The current access token of a tokenManaged system, from the internal API (which refreshes it for every
   * process on the store). A refused token is named by its hash. Retried like the order while the API is
   * unreachable or busy; an answer of the provider's (502) or a refusal is final. The error becomes the
   * step's, so it carries the API's message only.
   */
  async #accessToken(systemId: string, rejected: string | undefined): Promise<GrantedToken> {
    const body = {
      attempt: this.#config.attempt,
      systemId,
      ...(rejected !== undefined ? { rejectedSha256: accessTokenHash(rejected) } : {}),
    };
    const ask = async () => {
      try {
        return await this.#client.call(
          'POST',
          INTERNAL_PATHS.accessToken(this.#config.runId),
          AccessTokenAnswer,
          body,
          this.#stop.signal,
        );
      } catch (error) {
        // The provider refused or failed: the token service already made its one attempt.
        if (error instanceof InternalApiError && error.status === 502) {
          throw new InternalApiError(error.message, 502, false, error.reason);
        }
        throw error;
      }
    };
    return this.#askForStep(`access token of ${systemId}`, ask);
  }

  /**
   * An outbound identity token of this run for `audience`, signed by the internal API (this Pod never holds
   * the signing key). Retried like the order while the API is unreachable or busy; the error becomes the
   * step's, so it carries the API's message only.
   */
  async #identityToken(audience: string): Promise<IdentityGrant> {
    const body = { attempt: this.#config.attempt, audience };
    const ask = () =>
      this.#client.call(
        'POST',
        INTERNAL_PATHS.identityToken(this.#config.runId),
        IdentityTokenAnswer,
        body,
        this.#stop.signal,
      );
    return this.#askForStep(`identity token for ${audience}`, ask);
  }

  /**
   * A step's question to the internal API, retried like the order (within `budgetMs`, until the runner
   * stops) while the API is unreachable or busy. A final refusal becomes the step's error, so it carries
   * the API's message only.
   */
  async #askForStep<T>(
    what: string,
    ask: () => Promise<T>,
    budgetMs = this.#config.orderRetryMs,
  ): Promise<T> {
    try {
      return await withRetry(ask, {
        budgetMs,
        signal: this.#stop.signal,
        onRetry: (error, delayMs) => log(`${what}: ${error.message}; retrying in ${Math.round(delayMs)} ms`),
      });
    } catch (error) {
      if (!(error instanceof InternalApiError)) throw error;
      throw new Error(error.reason);
    }
  }

  /**
   * Systems' rate budgets, kept by the API for every process on the store: a take is retried like the
   * order while the API is unreachable; a refusal (no request before the deadline) fails the request with
   * the API's message. A release or pause is sent once: a lost release only holds a slot until the run's
   * deadline, a lost pause is the system's to repeat.
   */
  #budget(): BudgetSource {
    const call = (body: Omit<BudgetRequest, 'attempt'>) =>
      this.#client.call(
        'POST',
        INTERNAL_PATHS.budget(this.#config.runId),
        BudgetAnswer,
        { attempt: this.#config.attempt, ...body },
        this.#stop.signal,
      );
    const background = (body: Omit<BudgetRequest, 'attempt'>, what: string) => {
      call(body).catch((error: unknown) =>
        log(`budget ${what} of ${body.systemId}: ${(error as Error).message}`),
      );
    };
    return {
      take: async (systemId, withinMs): Promise<BudgetTicket> => {
        const answer = await this.#askForStep(
          `budget of ${systemId}`,
          () => call({ systemId, take: { withinMs } }),
          Math.min(withinMs, this.#config.orderRetryMs),
        );
        if ('retryInMs' in answer && answer.retryInMs !== undefined) return { retryInMs: answer.retryInMs };
        if (!('waitMs' in answer) || answer.waitMs === undefined) return { waitMs: 0 };
        const lease = 'lease' in answer && answer.lease ? { lease: answer.lease } : {};
        // The API's moment when this clock agrees with its clock (both NTP-synced): the wait from now.
        const untilThen = answer.at !== undefined ? answer.at - Date.now() : undefined;
        if (untilThen !== undefined && Math.abs(untilThen - answer.waitMs) <= CLOCKS_AGREE_MS) {
          return { waitMs: Math.max(0, untilThen), at: answer.at, ...lease };
        }
        return { waitMs: answer.waitMs, ...lease };
      },
      release: (systemId, lease) => background({ systemId, release: { lease } }, 'release'),
      pause: (systemId, forMs) => background({ systemId, pause: { forMs } }, 'pause'),
    };
  }

  /** The result, retried within its budget; a result too large for the API becomes a failure that fits. */
  async #putResult(result: EngineResult): Promise<Ack | undefined> {
    const put = (body: EngineResult) =>
      withRetry(
        () =>
          this.#client.call('PUT', INTERNAL_PATHS.result(this.#config.runId), ResultAck, {
            attempt: this.#config.attempt,
            result: body,
          }),
        {
          budgetMs: this.#config.resultRetryMs,
          onRetry: (error, delayMs) => log(`result: ${error.message}; retrying in ${Math.round(delayMs)} ms`),
        },
      );
    try {
      return await put(result);
    } catch (error) {
      if (!(error instanceof InternalApiError)) throw error;
      log(`result not stored: ${error.message}`);
      if (error.status !== 413) return undefined;
      try {
        // A recording is not worth the run: the result goes again with the recording's exchanges left out.
        if (result.recording?.exchanges)
          return await put({ ...result, recording: leftOutAll(result.recording) });
        return await put(failure('failed', 'The run result is larger than the internal API accepts'));
      } catch (again) {
        log(`result not stored: ${(again as Error).message}`);
        return undefined;
      }
    }
  }

  /** Heartbeats until the returned function is called; an answer saying cancel stops the run. */
  #startHeartbeats(): () => void {
    let inFlight = false;
    let failing = false;
    let stopped = false;
    const timer = setInterval(() => {
      if (inFlight) return;
      inFlight = true;
      this.#client
        .call('POST', INTERNAL_PATHS.heartbeat(this.#config.runId), RunnerAck, {
          attempt: this.#config.attempt,
        })
        .then((ack) => {
          failing = false;
          if (ack.cancel) this.#abort('the run was cancelled');
        })
        .catch((error: InternalApiError) => {
          if (stopped) return;
          if (error.status === 401 || error.status === 403)
            this.#abort('the internal API no longer accepts this runner');
          else if (!failing) log(`heartbeat: ${error.message}`);
          failing = true;
        })
        .finally(() => {
          inFlight = false;
        });
    }, this.#config.heartbeatMs);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }

  #abort(reason: string): void {
    if (this.#stop.signal.aborted) return;
    log(`stopping: ${reason}`);
    this.#stop.abort();
  }
}

/** The termination message: the stored outcome when the API answered, else what this runner saw. */
function summarize(runId: string, result: EngineResult, ack: Ack | undefined): RunnerSummary {
  // Not recorded: the run had ended already (a cancel won, or an earlier put whose answer was lost).
  const stored =
    ack && !ack.recorded && TERMINAL.has(ack.status) ? (ack.status as RunnerSummary['status']) : undefined;
  return {
    v: 1,
    runId,
    status: stored ?? result.status,
    resultStored: ack !== undefined,
    ...(result.error !== undefined ? { error: result.error } : {}),
    steps: result.stepResults.map((step) => ({ id: step.stepId, success: step.success })),
  };
}
