import type { FastifyRequest } from 'fastify';
import { KG_ERR_TOOL_ARCHIVED, KG_ERR_TOOL_NOT_FOUND, KG_ERR_VALIDATION } from '../../contract/api/errors.ts';
import type { ScheduleRunAs, ScheduleRunOptions } from '../../contract/api/schedule.ts';
import { checkWebhookUrl } from '../../runs/webhook-url.ts';
import type { ScheduleService } from '../../schedules/service.ts';
import { assertSystemsGranted } from '../../systems/grants.ts';
import type { ToolService } from '../../tools/service.ts';
import { allowedSystemIds, allowedToolIds, assertToolAccess, canUseTool, principalOf } from '../auth.ts';
import type { HandlersOf } from './register.ts';

/** The key writing a schedule: its runs carry its id and restrictions (DESIGN.md "API keys"). */
function runAsOf(request: FastifyRequest): ScheduleRunAs {
  const { id, toolIds, systemIds } = principalOf(request);
  return {
    userId: id,
    ...(toolIds !== null ? { toolIds } : {}),
    ...(systemIds !== null ? { systemIds } : {}),
  };
}

/**
 * /v1/schedules and /v1/tools/{toolId}/schedules, shaped as superglue's clients call them, and
 * /v1/schedules/next-runs, which shows a form's user when an expression would run before it is saved. A key limited
 * to tools sees and manages only their schedules (a schedule of another tool answers 404 like a missing
 * one); what a schedule's runs will do is checked when it is written as a run request would be, so a
 * mistake shows now and not as a failed run at the next tick.
 */
export function scheduleHandlers(deps: {
  schedules: ScheduleService;
  tools: ToolService;
}): HandlersOf<
  | 'listSchedules'
  | 'previewScheduleRuns'
  | 'listToolSchedules'
  | 'createToolSchedule'
  | 'getToolSchedule'
  | 'updateToolSchedule'
  | 'deleteToolSchedule'
> {
  const { schedules, tools } = deps;

  /**
   * The checks a run of the tool with these options would pass, as this key. The payload is checked against
   * the tool's inputSchema by the ScheduleService, which knows what a change keeps of it.
   */
  async function checkRuns(
    request: FastifyRequest,
    toolId: string,
    options: ScheduleRunOptions | undefined,
    creating: boolean,
  ): Promise<void> {
    checkWebhookUrl(options?.webhookUrl, (id) => canUseTool(request, id));
    const tool = await tools.get(toolId);
    if (!tool) {
      // A schedule of a deleted tool can still be changed (disabled, deleted); a new one needs the tool.
      if (creating) throw KG_ERR_TOOL_NOT_FOUND(toolId);
      return;
    }
    if (creating && tool.archived) throw KG_ERR_TOOL_ARCHIVED(toolId);
    assertSystemsGranted(allowedSystemIds(request), tool.steps);
  }

  return {
    listSchedules: async ({ query }, request) =>
      schedules.list({ page: query.page, limit: query.limit, toolIds: allowedToolIds(request) }),

    previewScheduleRuns: async ({ query }) => {
      const { expression, ticks } = schedules.nextRuns(query.cronExpression, query.timezone, query.count);
      return {
        cronExpression: expression,
        timezone: query.timezone,
        nextRuns: ticks.map((tick) => tick.toISOString()),
      };
    },

    listToolSchedules: async ({ params, query }, request) => {
      assertToolAccess(request, params.toolId);
      return schedules.list({
        toolId: params.toolId,
        page: query.page,
        limit: query.limit,
        toolIds: allowedToolIds(request),
      });
    },

    createToolSchedule: {
      authorize: ({ params }, request) => assertToolAccess(request, params.toolId),
      handle: async ({ params, body }, request, reply) => {
        if (body.toolId !== undefined && body.toolId !== params.toolId)
          throw KG_ERR_VALIDATION('schedule', `toolId: must equal the tool of the path ('${params.toolId}')`);
        await checkRuns(request, params.toolId, body.options, true);
        return reply.status(201).send(await schedules.create(params.toolId, body, runAsOf(request)));
      },
    },

    getToolSchedule: async ({ params }, request) => {
      assertToolAccess(request, params.toolId);
      return schedules.get(params.toolId, params.scheduleId);
    },

    updateToolSchedule: {
      authorize: ({ params }, request) => assertToolAccess(request, params.toolId),
      handle: async ({ params, body }, request) => {
        // 404 for a schedule that is not the tool's, before anything about the body is said.
        await schedules.get(params.toolId, params.scheduleId);
        await checkRuns(request, params.toolId, body.options, false);
        return schedules.update(params.toolId, params.scheduleId, body, runAsOf(request));
      },
    },

    deleteToolSchedule: async ({ params }, request) => {
      assertToolAccess(request, params.toolId);
      await schedules.delete(params.toolId, params.scheduleId);
      return { success: true };
    },
  };
}
