/**
 * Every label, annotation and finalizer key kubeglue puts on Kubernetes objects, in one place: call sites
 * name these constants, never the strings, so a key cannot drift between the code that writes it and the
 * code (or the selector) that reads it.
 */

// --- Labels (selectable; values are label-safe, see labelValueForId in convert.ts) ---

/**
 * The run a ToolRun, runner Pod or token Secret belongs to. One key, two uses: as a label it holds a
 * label-safe value derived from the run id (labelValueForId), as an annotation the exact run id.
 */
export const RUN_ID_KEY = 'kubeglue.dev/run-id';
/** The tool a ToolRun or runner Pod runs (a label-safe value derived from the tool id). */
export const TOOL_ID_LABEL = 'kubeglue.dev/tool-id';
/** The ToolRun (its name) a runner Pod or token Secret belongs to. */
export const TOOLRUN_LABEL = 'kubeglue.dev/toolrun';
/** The attempt of the run a runner Pod or token Secret is for. */
export const ATTEMPT_LABEL = 'kubeglue.dev/attempt';
/** Shared by the dev and prod objects of one system id (a label-safe value derived from the id). */
export const SYSTEM_ID_LABEL = 'kubeglue.dev/system-id';
/** The environment (dev or prod) of a System object. */
export const ENVIRONMENT_LABEL = 'kubeglue.dev/environment';
/** The role of a Pod in the application (runner Pods: `runner`). */
export const COMPONENT_LABEL = 'app.kubernetes.io/component';
/** Who manages an object: the operator's runner Pods and token Secrets, the Secrets of systems. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
/** The application an object is part of (the CustomResourceDefinitions). */
export const PART_OF_LABEL = 'app.kubernetes.io/part-of';

// --- Annotations ---

/** `updatedAt` of a Tool or System, which Kubernetes metadata has no field for. */
export const UPDATED_AT_ANNOTATION = 'kubeglue.dev/updated-at';
/**
 * Changes whenever a System variant's credentials are rewritten, so the System object itself changes and
 * every watcher (other replicas) drops its cached copy, even when nothing else in the object differs.
 */
export const CREDENTIALS_REVISION_ANNOTATION = 'kubeglue.dev/credentials-revision';
/**
 * Set on a System while the provider refuses its refresh token (systems/oauth/service.ts); the operator's
 * System reconciler turns it into Ready=False with reason OAuthReauthorizationRequired.
 */
export const OAUTH_STATUS_ANNOTATION = 'kubeglue.dev/oauth-status';

// --- Finalizers ---

/** Held on a ToolRun until the store has the run's terminal state, so the ToolRun never disappears first. */
export const RECORDED_FINALIZER = 'kubeglue.dev/run-recorded';
