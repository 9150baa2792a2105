/** Settings of the engine: worker processes, the sandbox, the bounds of a run's data, outbound connections. */
import { egressPrivate, egressRules, nonNegativeInt, positiveInt } from './schemas.ts';
import { API_ROLES, section, setting } from './setting.ts';

/** Every role that executes runs, or hands their settings to runner Pods (the operator). */
const EXECUTING = ['embedded', 'api', 'operator', 'runner'] as const;

export const ENGINE = section(
  'The engine',
  'How runs execute: the engine worker processes of the embedded and api roles, the sandbox of transforms, ' +
    "the bounds of a run's data and what steps may connect to. The operator reads the sandbox, bound and " +
    'egress settings only to hand them to runner Pods. How the sandbox shares its isolates between API ' +
    'keys: [engine/sandbox/README.md](../engine/sandbox/README.md); the egress rules: ' +
    '[the security model](security.md).',
  {
    workers: setting(
      'KUBEGLUE_WORKERS',
      positiveInt.optional(),
      undefined,
      API_ROLES,
      'most engine worker processes at once: one starts with the server, another when every live one has a run in flight (unset: the CPU count)',
    ),
    workerIdleMs: setting(
      'KUBEGLUE_WORKER_IDLE_MS',
      positiveInt,
      '60000',
      API_ROLES,
      'an engine worker without runs for this long exits, down to KUBEGLUE_IDLE_WORKERS',
    ),
    idleWorkers: setting(
      'KUBEGLUE_IDLE_WORKERS',
      nonNegativeInt,
      { embedded: '0', otherwise: '1' },
      API_ROLES,
      "engine workers kept running without runs: 0 lets the last one exit too (an idle server is one process, ~60 MiB less; the next run waits for a worker's start, ~0.2 s, more on a busy machine); 1 keeps one ready for the next run",
    ),
    sandboxMemoryMb: setting(
      'KUBEGLUE_SANDBOX_MEMORY_MB',
      positiveInt,
      '128',
      EXECUTING,
      "memory limit of a transform's isolate",
    ),
    sandboxTimeoutMs: setting(
      'KUBEGLUE_SANDBOX_TIMEOUT_MS',
      positiveInt,
      '10000',
      EXECUTING,
      'CPU time limit of one transform evaluation',
    ),
    sandboxKeyConcurrency: setting(
      'KUBEGLUE_SANDBOX_KEY_CONCURRENCY',
      positiveInt,
      '2',
      ['embedded', 'api', 'runner'],
      "transform evaluations one API key runs at once in an engine worker; each worker has one isolate more, so another key's transforms never wait behind them",
    ),
    maxStepDataBytes: setting(
      'KUBEGLUE_MAX_STEP_DATA_BYTES',
      positiveInt,
      String(10 * 1024 * 1024),
      EXECUTING,
      'largest data of one step, as UTF-8 JSON (a loop step: all its items); a step with more fails, naming its size, the limit and this setting',
    ),
    maxResultBytes: setting(
      'KUBEGLUE_MAX_RESULT_BYTES',
      positiveInt,
      String(20 * 1024 * 1024),
      EXECUTING,
      "largest result of a run, as UTF-8 JSON: its output data (files included) and every step's data together, as stored (without an outputTransform the last step's data counts twice: it is also the output); a run with more fails and keeps no step data",
    ),
    maxRecordingBytes: setting(
      'KUBEGLUE_MAX_RECORDING_BYTES',
      positiveInt,
      String(10 * 1024 * 1024),
      EXECUTING,
      "largest recording of a run (`options.record`, or the tool's `record`), as UTF-8 JSON: past it the run's later exchanges are left out and the recording says `truncated`; the run itself goes on",
    ),
    egress: {
      privateDefault: setting(
        'KUBEGLUE_EGRESS_PRIVATE',
        egressPrivate,
        { embedded: 'allow', otherwise: 'deny' },
        EXECUTING,
        'whether steps may reach loopback, private, link-local, CGNAT and unique-local addresses; cloud metadata addresses are always refused',
      ),
      allow: setting(
        'KUBEGLUE_EGRESS_ALLOW',
        egressRules,
        '',
        EXECUTING,
        'comma-separated CIDRs, IPs, host names (`*.suffix` for subdomains) or socket paths steps may reach even when private',
      ),
      deny: setting(
        'KUBEGLUE_EGRESS_DENY',
        egressRules,
        '',
        EXECUTING,
        'the same syntax: never reached, public or not; wins over every allow',
      ),
    },
  },
);
