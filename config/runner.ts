/**
 * Settings of the runner (`kubeglue runner`). In a runner Pod the operator sets the first ones, by the
 * names declared here (operator/toolrun/pod.ts); the others tune how the runner talks to the internal API.
 */
import { hostPort, positiveInt, text } from './schemas.ts';
import { section, setting } from './setting.ts';

export const RUNNER = section(
  'The runner',
  'A runner Pod gets its run from the operator through these variables, beside the sandbox, bound and ' +
    "egress settings of the engine; the token comes from the run's own Secret. `kubeglue runner --order " +
    "<file>` (a run order from a file) needs none of the Pod's variables.",
  {
    runId: setting(
      'KUBEGLUE_RUN_ID',
      text.optional(),
      undefined,
      ['runner'],
      'the run a runner Pod executes (set by the operator)',
    ),
    runToken: setting(
      'KUBEGLUE_RUN_TOKEN',
      text.optional(),
      undefined,
      ['runner'],
      "the run's own token for the internal API, from its Secret (set by the operator)",
    ),
    runAttempt: setting(
      'KUBEGLUE_RUN_ATTEMPT',
      positiveInt,
      '1',
      ['runner'],
      'which execution of the run this Pod is (set by the operator)',
    ),
    terminationMessagePath: setting(
      'KUBEGLUE_TERMINATION_MESSAGE_PATH',
      text,
      '/dev/termination-log',
      ['runner'],
      'where the runner leaves its summary for the operator (set by the operator)',
    ),
    gatewayRelay: setting(
      'KUBEGLUE_GATEWAY_RELAY',
      hostPort.optional(),
      undefined,
      ['runner'],
      "host:port of the api's gateway relay, entered with the run's token for steps on private systems (set by the operator from KUBEGLUE_RUNNER_GATEWAY_RELAY)",
    ),
    runner: {
      heartbeatMs: setting(
        'KUBEGLUE_RUNNER_HEARTBEAT_MS',
        positiveInt,
        '5000',
        ['runner'],
        'how often the runner sends a heartbeat (whose answer may cancel the run)',
      ),
      requestTimeoutMs: setting(
        'KUBEGLUE_RUNNER_REQUEST_TIMEOUT_MS',
        positiveInt,
        '10000',
        ['runner'],
        'time limit of each call to the internal API',
      ),
      orderRetryMs: setting(
        'KUBEGLUE_RUNNER_ORDER_RETRY_MS',
        positiveInt,
        '60000',
        ['runner'],
        'how long fetching the run order keeps retrying while the internal API is unreachable or failing',
      ),
      resultRetryMs: setting(
        'KUBEGLUE_RUNNER_RESULT_RETRY_MS',
        positiveInt,
        '60000',
        ['runner'],
        'how long putting the result keeps retrying',
      ),
      eventFlushMs: setting(
        'KUBEGLUE_RUNNER_EVENT_FLUSH_MS',
        positiveInt,
        '10000',
        ['runner'],
        'how long undelivered events may hold up putting the result once the run ended',
      ),
      eventBuffer: setting(
        'KUBEGLUE_RUNNER_EVENT_BUFFER',
        positiveInt,
        '1000',
        ['runner'],
        'progress events (step started, page fetched) kept while the API lags; step results are never dropped',
      ),
    },
  },
);
