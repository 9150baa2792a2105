/**
 * superglue's `sg schedule` commands (superglue-ai/cli 1.1.35, unmodified) against kubeglue: `list`,
 * `create` and `edit`, and the client's `deleteToolSchedule`, replayed with exactly the method, path, query
 * and body fields its bundled client sends (listToolSchedulesPage, getToolSchedule, createToolSchedule,
 * updateToolSchedule, deleteToolSchedule), and checked for what the CLI reads back: `data`, `total`,
 * `hasMore` and every schedule's `nextRunAt`, `createdAt` and `updatedAt` as UTC dates (its
 * requireUTCDate throws on anything else).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';
import { createEchoTool } from '../../support/schedules.ts';
import { SuperglueLikeClient } from '../../support/superglue-like-client.ts';

const api = useTestApi();
let sg: SuperglueLikeClient;

beforeAll(async () => {
  sg = new SuperglueLikeClient(api.url, TEST_ADMIN_KEY);
  await createEchoTool(api, 'daily_report');
  await createEchoTool(api, 'notify_team');
});

// biome-ignore lint/suspicious/noExplicitAny: the CLI reads untyped JSON, as this does
type Json = any;

/** The client's mapOpenAPIScheduleToToolSchedule: every date parsed, nextRunAt required. */
function mapSchedule(schedule: Json) {
  const date = (value: unknown, what: string) => {
    const parsed = typeof value === 'string' ? new Date(value) : undefined;
    if (!parsed || Number.isNaN(parsed.getTime())) throw new Error(`Invalid ${what}`);
    return parsed;
  };
  return {
    ...schedule,
    lastRunAt: schedule.lastRunAt ? date(schedule.lastRunAt, 'schedule.lastRunAt') : undefined,
    nextRunAt: date(schedule.nextRunAt, 'schedule.nextRunAt'),
    createdAt: date(schedule.createdAt, 'schedule.createdAt'),
    updatedAt: date(schedule.updatedAt, 'schedule.updatedAt'),
  };
}

/** listToolSchedulesPage: `/v1/tools/{id}/schedules?limit&page` with a tool, `/v1/schedules?limit&page` without. */
async function listPage(options: { toolId?: string; limit?: number; page?: number }) {
  const params = new URLSearchParams({
    limit: String(options.limit ?? 100),
    page: String(options.page ?? 1),
  });
  const path = options.toolId
    ? `/v1/tools/${encodeURIComponent(options.toolId)}/schedules?${params.toString()}`
    : `/v1/schedules?${params.toString()}`;
  const page = await sg.request('GET', path);
  return {
    items: page.data.map(mapSchedule),
    total: page.total,
    page: page.page,
    limit: page.limit,
    hasMore: page.hasMore,
  };
}

/** `sg schedule list [--tool]`: every page of 100, then the CLI filters and counts itself. */
async function scheduleList(toolId?: string) {
  const items = [];
  for (let page = 1; ; page++) {
    const response = await listPage({ ...(toolId ? { toolId } : {}), limit: 100, page });
    items.push(...response.items);
    if (!response.hasMore || response.items.length === 0) break;
  }
  return items;
}

describe('sg schedule', () => {
  let scheduleId: string;

  it('create: POST /v1/tools/{id}/schedules with the fields the CLI sends', async () => {
    // sg schedule create --tool daily_report --cron "0 9 * * 1-5" --timezone UTC --payload '{"limit":100}'
    //   --tool-chain notify_team --retries 2 --timeout 60000
    const created = mapSchedule(
      await sg.request('POST', `/v1/tools/${encodeURIComponent('daily_report')}/schedules`, {
        cronExpression: '0 9 * * 1-5',
        timezone: 'UTC',
        enabled: true,
        payload: { limit: 100 },
        options: { retries: 2, timeout: 60000, webhookUrl: 'tool:notify_team' },
      }),
    );
    expect(created).toMatchObject({
      toolId: 'daily_report',
      cronExpression: '0 9 * * 1-5',
      timezone: 'UTC',
      enabled: true,
      payload: { limit: 100 },
      options: { retries: 2, timeout: 60000, webhookUrl: 'tool:notify_team' },
    });
    expect(created.nextRunAt.getUTCHours()).toBe(9);
    scheduleId = created.id;

    // Without --timezone the client sends the machine's zone; without --payload and options, nothing.
    const local = mapSchedule(
      await sg.request('POST', '/v1/tools/daily_report/schedules', {
        cronExpression: '*/15 * * * *',
        timezone: 'Europe/Berlin',
        enabled: false,
      }),
    );
    expect(local).toMatchObject({ enabled: false, timezone: 'Europe/Berlin', payload: {}, options: {} });
  });

  it('list: every page, with the fields the CLI prints', async () => {
    const all = await scheduleList();
    expect(all.map((s) => s.id)).toContain(scheduleId);
    const row = all.find((s) => s.id === scheduleId);
    // formatScheduleForCli
    expect({
      id: row.id,
      toolId: row.toolId,
      status: row.enabled ? 'active' : 'inactive',
      cronExpression: row.cronExpression,
      timezone: row.timezone,
      nextRunAt: row.nextRunAt.toISOString(),
    }).toMatchObject({ toolId: 'daily_report', status: 'active', cronExpression: '0 9 * * 1-5' });
    expect(await scheduleList('daily_report')).toHaveLength(2);
    expect(await scheduleList('notify_team')).toHaveLength(0);
  });

  it('edit: GET the schedule to merge options, then PUT the fields that changed', async () => {
    // sg schedule edit --tool daily_report --id <id> --cron "0 8 * * *" --retries 1 --clear-webhook
    const existing = mapSchedule(await sg.request('GET', `/v1/tools/daily_report/schedules/${scheduleId}`));
    const { webhookUrl: _cleared, ...options } = { ...existing.options, retries: 1 };
    const updated = mapSchedule(
      await sg.request('PUT', `/v1/tools/daily_report/schedules/${encodeURIComponent(scheduleId)}`, {
        cronExpression: '0 8 * * *',
        options,
      }),
    );
    expect(updated).toMatchObject({
      cronExpression: '0 8 * * *',
      timezone: 'UTC',
      enabled: true,
      payload: { limit: 100 },
      options: { retries: 1, timeout: 60000 },
    });
    expect(updated.options.webhookUrl).toBeUndefined();
    expect(updated.updatedAt.getTime()).toBeGreaterThanOrEqual(existing.updatedAt.getTime());
    // sg schedule edit --tool daily_report --id <id> --disabled
    const disabled = mapSchedule(
      await sg.request('PUT', `/v1/tools/daily_report/schedules/${scheduleId}`, { enabled: false }),
    );
    expect(disabled.enabled).toBe(false);
  });

  it('getToolSchedule answers null for an unknown id (the message says not found)', async () => {
    const missing = await sg.orNull(sg.request('GET', '/v1/tools/daily_report/schedules/no-such-schedule'));
    expect(missing).toBeNull();
  });

  it('deleteToolSchedule: DELETE, then it is gone', async () => {
    await sg.request('DELETE', `/v1/tools/daily_report/schedules/${encodeURIComponent(scheduleId)}`);
    const missing = await sg.orNull(sg.request('GET', `/v1/tools/daily_report/schedules/${scheduleId}`));
    expect(missing).toBeNull();
    expect((await scheduleList('daily_report')).map((s) => s.id)).not.toContain(scheduleId);
  });
});
