import type { Run } from '../../contract/api/run.ts';
import type { ToolSchedule } from '../../contract/api/schedule.ts';
import type { TestApi } from './embedded.ts';
import { waitFor } from './kube/kubeglue.ts';

/**
 * Helpers of the schedule tests: a time to start the schedules' clock at (ahead of the real one, so every
 * schedule's creation lies before its ticks), schedules through REST, and waiting on what REST shows.
 */

/** A whole hour at least a day ahead of now: the ticks of minute schedules fall on known minutes after it. */
export function clockStart(): Date {
  const hour = 3600_000;
  return new Date(Math.ceil((Date.now() + 24 * hour) / hour) * hour);
}

/** `base` plus minutes (and seconds). */
export function at(base: Date, minutes: number, seconds = 0): Date {
  return new Date(base.getTime() + minutes * 60_000 + seconds * 1000);
}

/** Reads until ok(value), polling; throws naming what it waited for and the last value read. */
export function until<T>(what: string, read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  return waitFor(what, read, ok, 15_000);
}

export function getSchedule(api: TestApi, toolId: string, id: string, key?: string): Promise<ToolSchedule> {
  return api
    .call<ToolSchedule>('GET', `/v1/tools/${encodeURIComponent(toolId)}/schedules/${id}`, key ? { key } : {})
    .then((response) => {
      if (response.status !== 200) throw new Error(`GET schedule ${id}: ${response.status} ${response.text}`);
      return response.body;
    });
}

/** The schedule once the latest tick it acted on is `tick` (or later). */
export function untilTick(api: TestApi, toolId: string, id: string, tick: Date): Promise<ToolSchedule> {
  return until(
    `schedule ${id} to act on the tick at ${tick.toISOString()}`,
    () => getSchedule(api, toolId, id),
    (schedule) => schedule.lastTick !== undefined && Date.parse(schedule.lastTick.at) >= tick.getTime(),
  );
}

/** The runs a schedule started, oldest first. */
export async function runsOf(api: TestApi, toolId: string, scheduleId: string): Promise<Run[]> {
  const { body } = await api.call<{ data: Run[] }>(
    'GET',
    `/v1/runs?requestSources=scheduler&toolId=${encodeURIComponent(toolId)}&limit=100`,
  );
  return body.data.filter((run) => run.scheduleId === scheduleId).reverse();
}

export async function createSchedule(
  api: TestApi,
  toolId: string,
  body: Record<string, unknown>,
  key?: string,
): Promise<ToolSchedule> {
  const response = await api.call<ToolSchedule>('POST', `/v1/tools/${encodeURIComponent(toolId)}/schedules`, {
    body,
    ...(key ? { key } : {}),
  });
  if (response.status !== 201) throw new Error(`POST schedule: ${response.status} ${response.text}`);
  return response.body;
}

/** A tool of one transform step that returns its inputs. */
export async function createEchoTool(api: TestApi, id: string): Promise<void> {
  const response = await api.call('POST', '/v1/tools', {
    body: {
      id,
      steps: [{ id: 'echo', config: { type: 'transform', transformCode: '(s) => ({ n: s.n ?? null })' } }],
    },
  });
  if (response.status !== 201) throw new Error(`POST tool ${id}: ${response.status} ${response.text}`);
}
