/**
 * Every reason a user can read on a kubeglue resource, declared once: the `reason` of each condition the
 * operator writes (`kubectl describe`, the Ready and Reason columns of `kubectl get`), the reasons of the
 * Kubernetes Events it records, a ToolRun's `status.reason`, a ToolSchedule's `lastTick.reason` and the
 * `statusReason` REST shows for a schedule. Each says where it appears (its kind, and its condition with the
 * status it goes with, or its Event type), what it means and what to do, and is used by name
 * (`ToolReason.CompileError`), never written inline: the condition and Event writers of operator/ accept
 * only these names, and take a condition's status and an Event's type from here. A reason is a stable
 * CamelCase word: never reworded, never given another meaning (messages may change). docs/reasons.md is
 * generated from this file (`npm run generate`), as docs/errors.md is from the error catalog.
 */
import { STEP_SCHEMES } from './step-protocols.ts';

export type ReasonKind = 'Tool' | 'System' | 'ToolRun' | 'ToolSchedule';
export type ConditionStatus = 'True' | 'False' | 'Unknown';
export type EventType = 'Normal' | 'Warning';

/** What a reason tells a person: what it means, and what to do about it. */
export interface ReasonText {
  /** What it means, in a sentence or two. */
  means: string;
  /** What the user does about it, a sentence; `Nothing: …` when nothing is needed, saying why. */
  action: string;
}

export interface ReasonEntry extends ReasonText {
  name: string;
  /** The condition's status it is written with (condition reasons only). */
  status?: ConditionStatus;
  /** The Event's type (Event reasons, and the condition reasons whose changes are told as Events). */
  eventType?: EventType;
}

/** A set of reasons shown in one place of one kind: a condition, the Events, a status field. */
export interface ReasonGroup {
  kind: ReasonKind;
  /** The heading in docs/reasons.md: `Condition \`Ready\``, `Events`, `status.lastTick.reason`. */
  title: string;
  /** Where a user reads these reasons, and how they are written: the paragraph under the heading. */
  shown: string;
  /** The condition type, for condition reasons. */
  condition?: string;
  /** Whether these are Event reasons (or condition reasons also told as Events). */
  events: boolean;
  entries: ReasonEntry[];
}

const groups: ReasonGroup[] = [];

/** The declared names, each its own value: `ToolReason.Valid === 'Valid'`. */
type Names<R> = { readonly [N in keyof R & string]: N };

function declare<R extends Record<string, ReasonText>>(
  group: Omit<ReasonGroup, 'entries'>,
  reasons: R,
  entry: (name: string, text: R[keyof R]) => ReasonEntry,
): Names<R> {
  groups.push({
    ...group,
    entries: Object.entries(reasons).map(([name, text]) => entry(name, text as R[keyof R])),
  });
  return Object.freeze(Object.fromEntries(Object.keys(reasons).map((name) => [name, name]))) as Names<R>;
}

interface ConditionReason extends ReasonText {
  status: ConditionStatus;
}

/**
 * The reasons of one condition. `told`: each change of the condition is also an Event with its reason
 * (Normal when it turns True, Warning when it turns or stays False with another problem).
 */
function conditionReasons<const R extends Record<string, ConditionReason>>(
  group: { kind: ReasonKind; condition: string; title?: string; shown: string; told?: boolean },
  reasons: R,
): Names<R> {
  const { told = false, ...rest } = group;
  return declare(
    { title: `Condition \`${group.condition}\``, ...rest, events: told },
    reasons,
    (name, { status, means, action }) => ({
      name,
      status,
      ...(told ? { eventType: status === 'True' ? ('Normal' as const) : ('Warning' as const) } : {}),
      means,
      action,
    }),
  );
}

interface EventReason extends ReasonText {
  type: EventType;
}

function eventReasons<const R extends Record<string, EventReason>>(
  group: { kind: ReasonKind; shown: string },
  reasons: R,
): Names<R> {
  return declare({ title: 'Events', ...group, events: true }, reasons, (name, { type, means, action }) => ({
    name,
    eventType: type,
    means,
    action,
  }));
}

/** Reasons of a status field that is no condition. */
function fieldReasons<const R extends Record<string, ReasonText>>(
  group: { kind: ReasonKind; title: string; shown: string },
  reasons: R,
): Names<R> {
  return declare({ ...group, events: false }, reasons, (name, { means, action }) => ({
    name,
    means,
    action,
  }));
}

// --- Tool ---

export const ToolConditionType = { Ready: 'Ready' } as const;

export const ToolReason = conditionReasons(
  {
    kind: 'Tool',
    condition: ToolConditionType.Ready,
    told: true,
    shown:
      'Whether the Tool checks out: every script compiles, every JSON Schema is valid, every system it names exists and is Ready. `kubectl get tools` shows it in the Ready column, `kubectl describe tool <name>` with its message, which lists every problem at its field (`steps[1] (shape).config.transformCode: …`), the same messages a REST save answers with. The check runs again when the spec or a System the Tool uses changes.',
  },
  {
    Valid: {
      status: 'True',
      means: 'Every step checks out: scripts compile, schemas are valid, the systems exist and are Ready.',
      action: 'Nothing: the tool runs.',
    },
    InvalidSpec: {
      status: 'False',
      means:
        'The spec breaks the Tool schema: a missing field, duplicate or reserved step ids, a step id that shadows an input (the API server checks none of these, since the CRD has no CEL rules).',
      action:
        'Fix each field the message names and apply the Tool again; docs/tools.md describes every field.',
    },
    CompileError: {
      status: 'False',
      means: 'A transform, data selector, stop condition or template does not compile.',
      action:
        'Fix the code at the field, line and column the message names; test it with the dashboard or a dev run before applying.',
    },
    InvalidSchema: {
      status: 'False',
      means: 'inputSchema or outputSchema is not a valid JSON Schema.',
      action: 'Correct the schema where the message points and apply the Tool again.',
    },
    InvalidPagination: {
      status: 'False',
      means: 'The pagination settings of a step do not make sense together.',
      action:
        "Correct the step's config.pagination as the message says (docs/tools.md, pagination) and apply the Tool again.",
    },
    UnsupportedProtocol: {
      status: 'False',
      means:
        "A step's URL, or its System's, has a scheme no step speaks (MSSQL, MongoDB, or an unknown one).",
      action: `Use a URL of a scheme steps speak (${Object.keys(STEP_SCHEMES)
        .map((scheme) => scheme.slice(0, -1))
        .join(', ')}), or reach the system through an HTTP API in front of it.`,
    },
    UnknownSystem: {
      status: 'False',
      means: 'A step names a systemId that no System has.',
      action:
        'Create the System (`kubectl apply`, or POST /v1/systems), or correct the systemId; the Tool turns Ready by itself once it exists.',
    },
    SystemNotReady: {
      status: 'False',
      means:
        'A System the steps use is Ready=False; the message names it and its reason. The tool itself checks out (its own problems would be shown first), but its runs are refused (409 KG_ERR_RUN_SYSTEM_NOT_READY) so that no request goes out without its credentials.',
      action:
        'Fix the System as its own reason says (`kubectl describe system <name>`); the Tool turns Ready by itself once the System is.',
    },
    InvalidTool: {
      status: 'False',
      means: 'Problems of more than one kind; the message lists each at its field.',
      action: 'Fix each problem the message lists and apply the Tool again.',
    },
  },
);
export type ToolReason = (typeof ToolReason)[keyof typeof ToolReason];

// --- System ---

export const SystemConditionType = {
  /** Whether runs can use the System as stored (its credentials Secret exists and fits the auth type). */
  Ready: 'Ready',
  /** Whether the other environment (dev/prod) of the same system id exists; the message names it. */
  EnvironmentsLinked: 'EnvironmentsLinked',
} as const;

export const SystemReason = conditionReasons(
  {
    kind: 'System',
    condition: SystemConditionType.Ready,
    told: true,
    shown:
      'Whether runs can use the System as stored: its credentials Secret exists and fits the auth type, it has no duplicate, and OAuth is authorized. `kubectl get systems` shows it in the Ready column. Runs of tools that use a System that is not Ready are refused before any request is sent, and those Tools are `Ready=False` with `SystemNotReady`. Secrets are named by key, never shown by value. The embedded deployment has no System reconciler: there a System is usable when it exists.',
  },
  {
    CredentialsReady: {
      status: 'True',
      means: 'The credentials Secret exists and has every key the auth type needs.',
      action: 'Nothing: runs use the stored credentials.',
    },
    NoCredentialsNeeded: {
      status: 'True',
      means: 'The auth type needs no credentials.',
      action: 'Nothing: runs call the system without credentials.',
    },
    NoStoredCredentials: {
      status: 'True',
      means: 'No Secret is referenced, so runs must pass runtime credentials.',
      action:
        'Pass the credentials with each run (runtime credentials), or store them: create a Secret and name it in spec.credentialsSecretRef.',
    },
    SecretNotFound: {
      status: 'False',
      means: 'spec.credentialsSecretRef names a Secret that does not exist in the namespace.',
      action:
        "Create the Secret the message names in the System's namespace (or correct spec.credentialsSecretRef); the System turns Ready by itself.",
    },
    SecretUnreadable: {
      status: 'False',
      means:
        'The Secret exists but cannot be read: a value is not base64 text, or (embedded) the stored credentials were sealed with another master key.',
      action:
        'Write the Secret again with valid values; embedded, start with the master key the credentials were stored with (KUBEGLUE_MASTER_KEY), or store them again.',
    },
    CredentialsInvalid: {
      status: 'False',
      means:
        'The Secret lacks keys the auth type needs, or has unusable values; the message names the keys, never their values.',
      action:
        'Add or correct the keys the message names in the Secret (docs/systems-and-credentials.md lists the keys of each auth type).',
    },
    OAuthReauthorizationRequired: {
      status: 'False',
      means:
        'The OAuth provider refused the refresh token (invalid_grant: revoked, expired or reused); runs using the system fail until a user authorizes it again.',
      action:
        'Authorize the system again in a browser at the URL the message gives (GET /v1/systems/{systemId}/oauth/authorize?environment=…; docs/oauth.md).',
    },
    DuplicateSystem: {
      status: 'False',
      means: 'Another System object has the same system id and environment; the message names it.',
      action:
        'Delete one of the two, or give one the other environment (spec.environment dev or prod) or another spec.id.',
    },
  },
);
export type SystemReason = (typeof SystemReason)[keyof typeof SystemReason];

export const SystemLinkedReason = conditionReasons(
  {
    kind: 'System',
    condition: SystemConditionType.EnvironmentsLinked,
    shown:
      'Whether the other environment (dev or prod) of the same system id exists as another System object; the message names it. Its changes are not told as Events.',
  },
  {
    Linked: {
      status: 'True',
      means: 'Both environments exist: runs with options.mode dev use the dev System, others the prod one.',
      action: 'Nothing.',
    },
    SingleEnvironment: {
      status: 'False',
      means: 'Only this environment exists: it serves runs of both modes.',
      action:
        'Nothing, unless dev runs should call another system: then create the other environment (spec.environment) with the same spec.id.',
    },
  },
);
export type SystemLinkedReason = (typeof SystemLinkedReason)[keyof typeof SystemLinkedReason];

// --- ToolRun ---

/** The conditions of a ToolRun's status (the operator writes them, the API reads the admission). */
export const ToolRunConditionType = {
  /** True once the run holds an execution slot; False (AdmissionLimit) while it waits for one. */
  Admitted: 'Admitted',
  /** Unknown while the run is live, then True (it succeeded) or False (the reason says why not). */
  Succeeded: 'Succeeded',
} as const;

export const AdmissionReason = conditionReasons(
  {
    kind: 'ToolRun',
    condition: ToolRunConditionType.Admitted,
    shown:
      'Whether an asynchronous run holds an execution slot: at most KUBEGLUE_MAX_ASYNC_RUNS run at once (and KUBEGLUE_MAX_ASYNC_RUNS_PER_NAMESPACE per namespace); the others wait, admitted in creation order. GET /v1/stats/runs shows the message of each waiting run.',
  },
  {
    AdmissionLimit: {
      status: 'False',
      means:
        "Waiting for a slot: the global or the namespace's limit of runs executing at once is reached; the message gives the place in the queue and the limit.",
      action:
        'Nothing: it starts when a slot frees. If runs wait long, raise KUBEGLUE_MAX_ASYNC_RUNS (`operator.maxAsyncRuns` in the chart) when the cluster has room, or look for runs that take long (`kubectl get toolruns`).',
    },
    ToolConcurrencyLimit: {
      status: 'False',
      means:
        "Waiting for one of its tool's slots: the tool's maxConcurrentRuns runs execute already (counted across every replica and runner Pod); the message gives the place in the tool's queue and the limit.",
      action:
        "Nothing: it starts when a run of the tool ends. If runs wait long, raise the tool's maxConcurrentRuns (docs/operations.md#concurrency-per-tool) when the systems it calls allow it.",
    },
    Admitted: {
      status: 'True',
      means: 'The run holds an execution slot.',
      action: 'Nothing.',
    },
    NotAdmitted: {
      status: 'False',
      means: 'The run ended before it was ever admitted (cancelled while it waited).',
      action: 'Nothing: start it again if it should run.',
    },
  },
);
export type AdmissionReason = (typeof AdmissionReason)[keyof typeof AdmissionReason];

export const RunReason = conditionReasons(
  {
    kind: 'ToolRun',
    condition: ToolRunConditionType.Succeeded,
    title: 'Condition `Succeeded` and `status.reason`',
    shown:
      "Where an asynchronous run is: Unknown while it lives, then True or False. Once the run is admitted, `status.reason` says the same (the Reason column of `kubectl get toolruns -o wide`), and each finished run is counted by its status and reason in the metric kubeglue_toolruns_finished_total. The run record (GET /v1/runs/{runId}) keeps the run's error; a finished ToolRun is deleted after KUBEGLUE_TOOLRUN_RETENTION_MS, the record stays.",
  },
  {
    Queued: {
      status: 'Unknown',
      means: 'Live, waiting for an execution slot (condition Admitted says where in the queue).',
      action: 'Nothing: it starts when a slot frees (see AdmissionLimit).',
    },
    Pending: {
      status: 'Unknown',
      means: 'Live and admitted; its execution is starting (on Kubernetes: the runner Pod is pending).',
      action:
        'Nothing; a runner Pod that stays pending past KUBEGLUE_RUNNER_PENDING_TIMEOUT_MS fails the run with the cause.',
    },
    Running: {
      status: 'Unknown',
      means: 'Live, executing.',
      action: 'Nothing: follow it with `kubeglue logs <runId>` or the dashboard.',
    },
    Retrying: {
      status: 'Unknown',
      means:
        'Live: the execution of a read-only run (every step modify: false) was lost, and it starts over as its next attempt, up to KUBEGLUE_MAX_RUN_ATTEMPTS; the Retrying Event says why.',
      action:
        'Nothing for the run; if executions keep getting lost, look at the nodes and at why the runner Pods were stopped.',
    },
    Succeeded: {
      status: 'True',
      means: 'The run succeeded.',
      action: 'Nothing: read its result with GET /v1/runs/{runId}.',
    },
    Failed: {
      status: 'False',
      means:
        'The run failed: a step failed, the run timed out, or a System it uses was not Ready when it started; the message has its error.',
      action:
        "Read the error (the message, or GET /v1/runs/{runId} with each step's), fix the tool, its inputs or the system it calls, and run it again.",
    },
    Cancelled: {
      status: 'False',
      means:
        'The run was cancelled (POST /v1/runs/{runId}/cancel, spec.cancel, or the ToolRun was deleted while it ran).',
      action: 'Nothing: start it again if it should run.',
    },
    OOMKilled: {
      status: 'False',
      means: 'The runner Pod exceeded its memory limit (the message names it).',
      action:
        "Raise the runner's memory limit (KUBEGLUE_RUNNER_MEMORY_LIMIT; `runner.resources.limits.memory` in the chart), or make the run hold less data (smaller pages, fewer items per step).",
    },
    Evicted: {
      status: 'False',
      means:
        'Kubernetes evicted the runner Pod (node pressure, drain); a read-only run starts over instead (Retrying) while it has attempts left.',
      action:
        "Run it again; if Pods are evicted often, look at the node's pressure (`kubectl describe node`) and the runner's requests (KUBEGLUE_RUNNER_MEMORY_REQUEST).",
    },
    DeadlineExceeded: {
      status: 'False',
      means:
        "The runner Pod ran past its activeDeadlineSeconds: the run's timeout (options.timeout, else KUBEGLUE_DEFAULT_RUN_TIMEOUT_MS) plus KUBEGLUE_RUNNER_DEADLINE_MARGIN_SECONDS.",
      action:
        'Give the run a longer options.timeout if it needs it, or find the slow step in its step timings (GET /v1/runs/{runId}).',
    },
    ImagePullFailed: {
      status: 'False',
      means:
        "The runner image could not be pulled within KUBEGLUE_RUNNER_PENDING_TIMEOUT_MS; the message has the kubelet's reason.",
      action:
        "Check the runner image (KUBEGLUE_RUNNER_IMAGE, the chart's image), that the nodes reach its registry, and its pull Secrets (KUBEGLUE_RUNNER_IMAGE_PULL_SECRETS); then run it again.",
    },
    Unschedulable: {
      status: 'False',
      means:
        "The runner Pod could not be scheduled within KUBEGLUE_RUNNER_PENDING_TIMEOUT_MS; the message has the scheduler's reason.",
      action:
        "Make room or fit the Pod to the nodes: node capacity, the runner's requests, KUBEGLUE_RUNNER_NODE_SELECTOR, KUBEGLUE_RUNNER_TOLERATIONS and KUBEGLUE_RUNNER_AFFINITY; then run it again.",
    },
    PodPendingTimeout: {
      status: 'False',
      means:
        'The runner Pod did not start within KUBEGLUE_RUNNER_PENDING_TIMEOUT_MS for another reason (the message has it).',
      action:
        "Look at the Pod's events (`kubectl describe pod`, while KUBEGLUE_FAILED_POD_RETENTION_MS keeps it) and fix what holds it, then run it again.",
    },
    PodLost: {
      status: 'False',
      means:
        'The runner Pod disappeared or was stopped from outside while the run lived (node lost, Pod deleted by someone else, drained); a read-only run starts over instead (Retrying) while it has attempts left.',
      action:
        'Run it again; look at what deletes runner Pods or loses nodes if it recurs. A run that modifies data is never retried by itself: check what its steps did first.',
    },
    HeartbeatStale: {
      status: 'False',
      means:
        "The runner's Pod says Running but the runner sent no heartbeat for KUBEGLUE_RUNNER_HEARTBEAT_STALE_MS (node lost, runner hung, or it cannot reach the internal port); its Pod is deleted, and a read-only run starts over instead (Retrying) while it has attempts left.",
      action:
        "Check that runner Pods reach the API's internal port (KUBEGLUE_INTERNAL_URL, network policies) and look at the runner's logs and the node; then run it again.",
    },
    RunnerFailed: {
      status: 'False',
      means:
        'The runner ended without a result in the store; the message has its exit code and summary, or the error it reported.',
      action:
        "Read the runner Pod's logs (`kubectl logs`, while KUBEGLUE_FAILED_POD_RETENTION_MS keeps it) and the message; a runner that cannot reach the internal port fails so.",
    },
    ExecutionLost: {
      status: 'False',
      means:
        'Embedded: the in-process execution of the run is gone while the run lived (the worker or the process stopped).',
      action: 'Run it again; if it recurs, look in the log for the worker or process that stopped.',
    },
    RunNotFound: {
      status: 'False',
      means:
        "The store has no run with the ToolRun's spec.runId: ToolRuns are created by kubeglue for runs it stored, not by hand.",
      action:
        'Start runs through the API (POST /v1/tools/{id}/run with options.async, or a ToolSchedule), and delete this ToolRun.',
    },
  },
);
export type RunReason = (typeof RunReason)[keyof typeof RunReason];

export const ToolRunEventReason = eventReasons(
  {
    kind: 'ToolRun',
    shown:
      "Each transition of a run, told once (a repeat of the same Event counts up the Event's count). The embedded deployment records no Events.",
  },
  {
    Queued: {
      type: 'Normal',
      means: 'The run waits for an execution slot; the message gives its place in the queue.',
      action: 'Nothing: see AdmissionLimit.',
    },
    Admitted: {
      type: 'Normal',
      means: 'The run got an execution slot.',
      action: 'Nothing.',
    },
    PodCreated: {
      type: 'Normal',
      means:
        'The runner Pod (and its per-run token Secret) was created; the message names the Pod and the attempt.',
      action: 'Nothing: `kubectl logs <pod>` follows the runner.',
    },
    Started: {
      type: 'Normal',
      means: 'Embedded: the run started executing in the worker pool.',
      action: 'Nothing.',
    },
    Running: {
      type: 'Normal',
      means: 'The run is executing (the runner Pod is running).',
      action: 'Nothing.',
    },
    Succeeded: {
      type: 'Normal',
      means: 'The run succeeded; the message gives its duration.',
      action: 'Nothing: read its result with GET /v1/runs/{runId}.',
    },
    Failed: {
      type: 'Warning',
      means: 'The run failed; the message has its error.',
      action:
        "Read the error (GET /v1/runs/{runId} has each step's), fix the tool, its inputs or the system it calls, and run it again.",
    },
    Cancelled: {
      type: 'Normal',
      means: 'The run was cancelled.',
      action: 'Nothing.',
    },
    Stopping: {
      type: 'Normal',
      means:
        'The run ended (cancelled, or failed by the operator) but its runner did not stop within KUBEGLUE_CANCEL_GRACE_MS: its Pod is deleted.',
      action:
        'Nothing; a runner that never stops by itself may not reach the internal port (see HeartbeatStale).',
    },
    PodFailed: {
      type: 'Warning',
      means:
        "The operator failed the run for its runner Pod; the message names the cause, also the Succeeded condition's reason (OOMKilled, DeadlineExceeded, ImagePullFailed, …).",
      action: 'Do what the reason of the Succeeded condition says.',
    },
    ExecutionLost: {
      type: 'Warning',
      means: 'Embedded: the in-process execution of a live run is gone; the run failed.',
      action: 'Run it again; if it recurs, look in the log for the worker or process that stopped.',
    },
    Retrying: {
      type: 'Warning',
      means:
        "A read-only run's execution was lost (its runner Pod gone, evicted or silent): the next attempt starts in a new Pod; the message says why and which attempt.",
      action:
        'If it recurs, look at what stops runner Pods (node pressure, drains, deletions); the run itself starts over without help.',
    },
    PodRetained: {
      type: 'Normal',
      means:
        'The runner Pod of a failed or cancelled run is kept for inspection until the time in the message (KUBEGLUE_FAILED_POD_RETENTION_MS).',
      action: 'Read its logs (`kubectl logs`) before then, if the run failed for its runner.',
    },
    PodDeleted: {
      type: 'Normal',
      means: 'The runner Pod was deleted (at once after a success, else after its retention).',
      action: 'Nothing.',
    },
    Retained: {
      type: 'Normal',
      means:
        'The finished ToolRun is kept until the time in the message (KUBEGLUE_TOOLRUN_RETENTION_MS); the run record stays in the store.',
      action: 'Nothing: GET /v1/runs/{runId} keeps the run after the ToolRun is gone.',
    },
    Deleted: {
      type: 'Normal',
      means: 'The finished ToolRun was deleted after its retention.',
      action: 'Nothing.',
    },
  },
);
export type ToolRunEventReason = (typeof ToolRunEventReason)[keyof typeof ToolRunEventReason];

// --- ToolSchedule ---

export const ScheduleConditionType = { Ready: 'Ready' } as const;

export const ScheduleReason = conditionReasons(
  {
    kind: 'ToolSchedule',
    condition: ScheduleConditionType.Ready,
    shown:
      "Whether the schedule's ticks start runs: `kubectl get toolschedules` shows it in the Ready column. REST shows the same reason as `statusReason` (with `status` active, disabled, paused or invalid, and the message as `statusMessage`), and the dashboard beside each schedule. A paused schedule resumes by itself once what holds it back is gone; ticks that pass meanwhile are not made up (docs/schedules.md).",
  },
  {
    Scheduled: {
      status: 'True',
      means: 'Each tick starts a run.',
      action: 'Nothing.',
    },
    Suspended: {
      status: 'False',
      means: 'spec.suspend is true (REST: enabled false): no tick starts a run.',
      action: 'Set spec.suspend false (REST: enabled true) to resume from the next tick.',
    },
    ToolArchived: {
      status: 'False',
      means: 'The tool is archived: the schedule is paused.',
      action: 'Unarchive the tool to resume from the next tick, or delete the schedule.',
    },
    ToolNotFound: {
      status: 'False',
      means: 'The tool does not exist (deleted, or never created): the schedule is paused.',
      action: 'Create the tool again to resume from the next tick, or delete the schedule.',
    },
    InputsInvalid: {
      status: 'False',
      means:
        "The schedule's inputs no longer satisfy the tool's inputSchema (the tool changed): the schedule is paused; the message has the violations.",
      action:
        'Change the inputs (REST: payload) to satisfy the inputSchema, or the tool to accept them again.',
    },
    KeyRevoked: {
      status: 'False',
      means: 'The API key the schedule runs as (spec.runAs.userId) was revoked: no tick starts a run.',
      action:
        'Change the schedule with a key that may run the tool (any PUT, such as pausing and resuming it): its runs then carry that key.',
    },
    KeyNotAllowed: {
      status: 'False',
      means:
        'The key the schedule runs as may no longer run the tool (it lacks runs:execute, the tool or a system it uses): no tick starts a run.',
      action:
        'Change the schedule with a key that may run the tool (any PUT), or give the key back what it lacks.',
    },
    InvalidSchedule: {
      status: 'False',
      means: 'The cron expression or the time zone cannot be evaluated; the message says why.',
      action: 'Correct spec.schedule or spec.timeZone (docs/schedules.md, cron expressions and time zones).',
    },
  },
);
export type ScheduleReason = (typeof ScheduleReason)[keyof typeof ScheduleReason];

export const ScheduleStatusReason = fieldReasons(
  {
    kind: 'ToolSchedule',
    title: '`statusReason` in REST, before the operator looked',
    shown:
      "REST (`GET /v1/schedules`, `GET /v1/tools/{toolId}/schedules`) shows the Ready condition's reason as `statusReason`; before the operator first looked at a new schedule, it shows this one.",
  },
  {
    Pending: {
      means: 'Written, not yet looked at by the operator.',
      action:
        'Nothing: the operator takes it up within seconds; if it stays, check that the operator runs (`kubectl -n kubeglue get pods`).',
    },
  },
);
export type ScheduleStatusReason = (typeof ScheduleStatusReason)[keyof typeof ScheduleStatusReason];

/** Why a claimed tick started no run (stored with the claim; the status and REST show it). */
export const TickReason = fieldReasons(
  {
    kind: 'ToolSchedule',
    title: '`status.lastTick.reason`',
    shown:
      "Why the latest tick started no run: `status.lastTick` (REST: `lastTick`) has the tick's time, its outcome (Skipped or Missed) and this reason; the dashboard shows it beside the last tick.",
  },
  {
    ConcurrencyForbid: {
      means: 'concurrencyPolicy is Forbid and a run of the schedule was still running: the tick was skipped.',
      action:
        'Nothing, if runs may not overlap; otherwise use concurrencyPolicy Allow or Replace, or make runs shorter than the interval.',
    },
    DeadlineExceeded: {
      means:
        'Missed: kubeglue could start the tick only later than startingDeadlineSeconds (it was down, or busy); the next tick runs as usual.',
      action: 'Nothing; raise startingDeadlineSeconds (or remove it) if late runs are better than none.',
    },
    Resumed: {
      means:
        'The tick passed while the schedule was suspended, paused or invalid; it resumed after, and missed ticks are not made up.',
      action: 'Nothing: start a run by hand if the missed one matters.',
    },
    ScheduleChanged: {
      means:
        'The tick passed under another spec: the cron expression or time zone changed since, and the schedule starts from its next tick.',
      action: 'Nothing.',
    },
  },
);
export type TickReason = (typeof TickReason)[keyof typeof TickReason];

export const ScheduleEventReason = eventReasons(
  {
    kind: 'ToolSchedule',
    shown: 'What the schedule did, tick by tick, and each change of its Ready condition.',
  },
  {
    RunStarted: {
      type: 'Normal',
      means: 'A tick started its run; the message names the run (GET /v1/runs/{runId}).',
      action: 'Nothing.',
    },
    RunRefused: {
      type: 'Warning',
      means:
        'Acceptance refused the run of a tick (inputs against the inputSchema, a system the key may not use, …): it is kept as a failed run with requestSource scheduler and the reason.',
      action: 'Fix what the message names (the inputs, the tool, or the key the schedule runs as).',
    },
    RunRetried: {
      type: 'Normal',
      means:
        'A failed run of the latest tick was started again (options.retries); the message names both runs.',
      action: 'Nothing; if runs keep failing, read their errors (GET /v1/runs/{runId}).',
    },
    RunReplaced: {
      type: 'Normal',
      means: "concurrencyPolicy Replace cancelled a running run of the schedule for the new tick's.",
      action:
        'Nothing, if that is the policy wanted; runs that never finish within the interval are cancelled every time.',
    },
    ConcurrencyForbid: {
      type: 'Normal',
      means: 'concurrencyPolicy Forbid skipped a tick: a run of the schedule was still running.',
      action: 'Nothing, if runs may not overlap; otherwise use concurrencyPolicy Allow or Replace.',
    },
    MissedSchedule: {
      type: 'Warning',
      means: 'A tick could start only later than startingDeadlineSeconds, so it started no run.',
      action:
        "Check why kubeglue was down or late at the tick (the operator's Pods and logs); raise startingDeadlineSeconds if late runs are better than none.",
    },
    Paused: {
      type: 'Warning',
      means:
        'Something holds the schedule back (its tool, its inputs, its key): ticks start no run; the message says what.',
      action:
        "Do what the Ready condition's reason says (ToolArchived, ToolNotFound, InputsInvalid, KeyRevoked, KeyNotAllowed).",
    },
    Resumed: {
      type: 'Normal',
      means: 'Ticks start runs again.',
      action: 'Nothing.',
    },
    Suspended: {
      type: 'Normal',
      means: 'The schedule was suspended (spec.suspend true; REST: enabled false).',
      action: 'Nothing; resume it with spec.suspend false (REST: enabled true).',
    },
    InvalidSchedule: {
      type: 'Warning',
      means: 'The cron expression or the time zone cannot be evaluated: no tick starts a run.',
      action: 'Correct spec.schedule or spec.timeZone as the message says.',
    },
    ReconcileFailed: {
      type: 'Warning',
      means:
        'Looking at the schedule failed (the store or the API server unreachable, a run that could not be started); retried with backoff, given up after KUBEGLUE_JOB_MAX_FAILURES until the next tick.',
      action:
        "Read the message and the operator's log; it resolves by itself once the store and the API server answer.",
    },
  },
);
export type ScheduleEventReason = (typeof ScheduleEventReason)[keyof typeof ScheduleEventReason];

// --- what the writers take ---

/** The reasons each condition type may be written with. */
export interface ConditionReasons {
  Ready: ToolReason | SystemReason | ScheduleReason;
  EnvironmentsLinked: SystemLinkedReason;
  Admitted: AdmissionReason;
  Succeeded: RunReason;
}
export type ConditionType = keyof ConditionReasons;

/** The Event reasons each kind may be recorded with. */
export interface EventReasons {
  Tool: ToolReason;
  System: SystemReason;
  ToolRun: ToolRunEventReason;
  ToolSchedule: ScheduleEventReason;
}

/** Every group, in the order of docs/reasons.md. */
export const REASON_GROUPS: readonly ReasonGroup[] = groups;

/** Condition type → reason → status, and kind → Event reason → type: what the writers look up. */
const STATUS = new Map<string, Map<string, ConditionStatus>>();
const EVENT_TYPE = new Map<string, Map<string, EventType>>();

function index<V>(into: Map<string, Map<string, V>>, key: string, name: string, value: V): void {
  const names = into.get(key) ?? new Map<string, V>();
  // One word, one meaning: a name is looked up by its condition type (or kind) alone.
  if (names.has(name) && names.get(name) !== value)
    throw new Error(`reason ${name} of ${key} is declared twice`);
  into.set(key, names.set(name, value));
}

for (const group of groups) {
  for (const entry of group.entries) {
    if (group.condition && entry.status) index(STATUS, group.condition, entry.name, entry.status);
    if (group.events && entry.eventType) index(EVENT_TYPE, group.kind, entry.name, entry.eventType);
  }
}

/** The status a condition is written with for a reason: declared with the reason, never chosen beside it. */
export function conditionStatus<T extends ConditionType>(
  type: T,
  reason: ConditionReasons[T],
): ConditionStatus {
  const status = STATUS.get(type)?.get(reason);
  if (!status) throw new Error(`reason ${reason} is not declared for condition ${type}`);
  return status;
}

/** The type of an Event of a kind with a reason: declared with the reason. */
export function eventType<K extends ReasonKind>(kind: K, reason: EventReasons[K]): EventType {
  const type = EVENT_TYPE.get(kind)?.get(reason);
  if (!type) throw new Error(`reason ${reason} is not declared for Events of a ${kind}`);
  return type;
}

/** `A, B, C`: the names of a set of reasons, for schema descriptions. */
export function reasonList(reasons: Readonly<Record<string, string>>): string {
  return Object.keys(reasons).join(', ');
}
