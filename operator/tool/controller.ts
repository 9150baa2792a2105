import { conditionChangeEvent, type EventRecorder, NO_EVENTS } from '../events.ts';
import type { ControllerHealth } from '../health.ts';
import { informerOptions } from '../informer-options.ts';
import { writeDecidedStatus } from '../status.ts';
/**
 * The Tool controller's wiring: Tools and Systems informers and a work queue. A Tool is checked when it
 * changes and whenever a System it uses is added, changed (its Ready condition included) or removed;
 * the status is written through /status only when it differs.
 */

import { stepSystemIds } from '../../contract/api/tool.ts';
import { toolFromResource } from '../../contract/resources/convert.ts';
import type { SystemResource, ToolResource } from '../../contract/resources/kinds.ts';
import { Informer } from '../../kube/informer.ts';
import type { ResourceClient } from '../../kube/resources/index.ts';
import type { WorkQueue } from '../../kube/work-queue.ts';
import { groupVariants, variantForMode, variantUrls } from '../../systems/model.ts';
import { describeUnreadiness, systemUnreadiness } from '../../systems/readiness.ts';
import { checkTool, problemLine } from '../../tools/validation.ts';
import { reconcileQueue } from '../reconcile-queue.ts';
import { decideTool, readyCondition, type ToolObservation } from './reconcile.ts';

export interface ToolControllerOptions {
  tools: ResourceClient<ToolResource>;
  systems: ResourceClient<SystemResource>;
  /** Where the Ready condition's changes are told (`kubectl describe tool`); nowhere without it. */
  events?: EventRecorder;
  resyncMs?: number;
  log?: (line: string) => void;
  now?: () => Date;
}

/** System ids a Tool's steps reference. */
export function systemIdsOfTool(tool: ToolResource): Set<string> {
  const ids = new Set<string>();
  for (const step of Array.isArray(tool.spec.steps) ? tool.spec.steps : []) {
    const config = step.config as { type?: string; systemId?: string };
    if (config.type !== 'transform' && config.systemId) ids.add(config.systemId);
  }
  return ids;
}

export class ToolController {
  readonly #opts: ToolControllerOptions;
  readonly #tools: Informer<ToolResource>;
  readonly #systems: Informer<SystemResource>;
  readonly #queue: WorkQueue;

  constructor(opts: ToolControllerOptions) {
    this.#opts = opts;
    const informers = informerOptions(opts);
    this.#tools = new Informer(opts.tools, { kind: 'Tool', ...informers });
    // Ids and Ready conditions matter here; the System controller resyncs Systems.
    this.#systems = new Informer(opts.systems, { kind: 'System', ...informers, resyncMs: 0 });
    this.#queue = reconcileQueue('tool', (name) => this.#reconcile(name), opts.log);
  }

  async start(): Promise<void> {
    this.#tools.on('change', (name) => this.#queue.add(name));
    this.#systems.onEvent((_type, system) => this.#systemChanged(system));
    await this.#systems.start();
    await this.#tools.start();
  }

  async stop(): Promise<void> {
    await this.#queue.shutdown();
    await Promise.all([this.#tools.stop(), this.#systems.stop()]);
  }

  idle(): Promise<void> {
    return this.#queue.idle();
  }

  /** Informers and queue for the operator's metrics. */
  health(): ControllerHealth {
    return { informers: [this.#tools], queues: { tool: this.#queue } };
  }

  #systemChanged(system: SystemResource): void {
    const id = system.spec.id;
    for (const tool of this.#tools.values()) {
      if (systemIdsOfTool(tool).has(id)) this.#queue.add(tool.metadata.name);
    }
  }

  async #reconcile(name: string): Promise<void> {
    const tool = this.#tools.get(name);
    if (!tool) return;
    const observation = await this.#observe(tool);
    const { patch } = decideTool(observation);
    if (!patch) return;
    const written = await writeDecidedStatus(this.#opts.tools, this.#tools, tool, patch);
    const event = written && conditionChangeEvent(tool.status?.conditions, readyCondition(observation));
    if (event) await (this.#opts.events ?? NO_EVENTS).record(written, event.reason, event.message);
  }

  async #observe(tool: ToolResource): Promise<ToolObservation> {
    const now = this.#opts.now?.() ?? new Date();
    const variants = groupVariants(this.#systems.values());
    // The API server checked only the CRD's schema (no CEL rules): checkTool is the same check a REST
    // save makes, from the spec's shape and step ids to the sandbox and the Systems.
    try {
      const check = await checkTool(toolFromResource(tool), {
        systemExists: async (id) => variants.has(id),
        systemUrls: async (id) => variantUrls(variants.get(id)),
      });
      if (!check.tool) return { now, tool, specIssues: check.problems.map(problemLine), problems: [] };
      const used = new Set(stepSystemIds(check.tool.steps));
      // Ready speaks for the runs a tool gets by default (production), with the variant such a run picks.
      // A dev variant that is not ready refuses dev runs when they come, but does not make the tool unready
      // (a GitOps repo may deliver dev credentials later, or never).
      const unreadySystems = [...used]
        .flatMap((id) => {
          const ofId = variants.get(id);
          const variant = ofId && variantForMode(ofId, 'prod');
          const unready = variant && systemUnreadiness(variant);
          return unready ? [describeUnreadiness(unready)] : [];
        })
        .sort();
      return { now, tool, problems: check.problems.map(problemLine), unreadySystems };
    } catch (error) {
      // checkTool reports problems rather than throwing; this is the last guard of the reconciler.
      return { now, tool, specIssues: [(error as Error).message], problems: [] };
    }
  }
}
