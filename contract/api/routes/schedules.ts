/** The Schedules routes: every schedule, a cron expression's next ticks, a tool's schedules. */
import { DeleteResult } from '../bodies.ts';
import {
  ListSchedulesQuery,
  ScheduleNextRuns,
  ScheduleNextRunsQuery,
  ToolSchedule,
  ToolScheduleCreateBody,
  ToolScheduleList,
  ToolScheduleUpdateBody,
} from '../schedule.ts';
import { badRequest, failure, notFound, updateRefused } from './shared.ts';
import type { RouteSpec } from './spec.ts';

/** The Schedules operations. */
export const SCHEDULE_ROUTES = [
  {
    method: 'GET',
    path: '/schedules',
    operationId: 'listSchedules',
    summary: 'List the schedules of every tool the key may see',
    tag: 'Schedules',
    scopes: ['tools:read'],
    query: ListSchedulesQuery,
    responses: { 200: { description: 'Schedules, oldest first', schema: ToolScheduleList }, 400: badRequest },
  },
  {
    method: 'GET',
    path: '/schedules/next-runs',
    operationId: 'previewScheduleRuns',
    summary: 'When a cron expression would run in a time zone: its next ticks, before a schedule is written',
    tag: 'Schedules',
    scopes: ['tools:read'],
    query: ScheduleNextRunsQuery,
    responses: {
      200: { description: 'The next ticks', schema: ScheduleNextRuns },
      400: failure('A cron expression or time zone a schedule would refuse'),
    },
  },
  {
    method: 'GET',
    path: '/tools/{toolId}/schedules',
    operationId: 'listToolSchedules',
    summary: "List a tool's schedules (also those of a deleted tool, paused)",
    tag: 'Schedules',
    scopes: ['tools:read'],
    query: ListSchedulesQuery,
    responses: {
      200: { description: 'Schedules, oldest first', schema: ToolScheduleList },
      400: badRequest,
      404: failure('The key may not see the tool'),
    },
  },
  {
    method: 'POST',
    path: '/tools/{toolId}/schedules',
    operationId: 'createToolSchedule',
    summary: 'Schedule a tool: each tick of the cron expression starts an async run',
    tag: 'Schedules',
    scopes: ['tools:write', 'runs:execute'],
    body: { schema: ToolScheduleCreateBody, name: 'schedule' },
    responses: {
      201: { description: 'Created', schema: ToolSchedule },
      400: failure(
        'Invalid body, cron expression or time zone; inputs that break the inputSchema; archived tool',
      ),
      404: notFound,
      409: failure('A schedule with this id exists'),
    },
  },
  {
    method: 'GET',
    path: '/tools/{toolId}/schedules/{scheduleId}',
    operationId: 'getToolSchedule',
    summary: 'Get a schedule',
    tag: 'Schedules',
    scopes: ['tools:read'],
    responses: { 200: { description: 'The schedule', schema: ToolSchedule }, 404: notFound },
  },
  {
    method: 'PUT',
    path: '/tools/{toolId}/schedules/{scheduleId}',
    operationId: 'updateToolSchedule',
    summary: 'Change a schedule: the fields given change, the others stay',
    tag: 'Schedules',
    scopes: ['tools:write', 'runs:execute'],
    body: { schema: ToolScheduleUpdateBody, name: 'schedule update', optional: true },
    responses: {
      200: { description: 'The updated schedule', schema: ToolSchedule },
      ...updateRefused,
    },
  },
  {
    method: 'DELETE',
    path: '/tools/{toolId}/schedules/{scheduleId}',
    operationId: 'deleteToolSchedule',
    summary: 'Delete a schedule (its running runs go on)',
    tag: 'Schedules',
    scopes: ['tools:write', 'runs:execute'],
    responses: { 200: { description: 'Deleted', schema: DeleteResult }, 404: notFound },
  },
] as const satisfies readonly RouteSpec[];
