/**
 * One format for every instant /v1 answers: ISO 8601 in UTC with milliseconds (`2026-01-02T03:04:05.000Z`),
 * as runs have always had it. Tools, systems and schedules take theirs from Kubernetes metadata and status
 * (whole seconds: `…:05Z`) and from an annotation (milliseconds); a client comparing or parsing them
 * strictly must not meet both formats in one answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, waitForRun } from '../../support/embedded.ts';
import { ManualClock } from '../../support/manual-clock.ts';
import { at, clockStart, createEchoTool, createSchedule, untilTick } from '../../support/schedules.ts';

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Every field of an answer that holds an instant (`…At`, `at`, `timestamp`), by its path. */
function instants(value: unknown, path = '$', found = new Map<string, unknown>()): Map<string, unknown> {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) instants(item, `${path}[${i}]`, found);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (/At$|^at$|^timestamp$/.test(key) && child !== null) found.set(`${path}.${key}`, child);
      else instants(child, `${path}.${key}`, found);
    }
  }
  return found;
}

/** The answer's instants are all in the one format, and those named are among them. */
function expectOneFormat(answer: unknown, named: string[]): void {
  const found = instants(answer);
  expect([...found.keys()]).toEqual(expect.arrayContaining(named));
  for (const [path, value] of found) expect(value, path).toMatch(INSTANT);
}

const base = clockStart();
const clock = new ManualClock(at(base, 0, 30));
let api: TestApi;

async function ok<T>(method: string, path: string, body?: unknown): Promise<T> {
  const answer = await api.call<T>(method, path, body === undefined ? {} : { body });
  expect(answer.status, `${method} ${path}: ${answer.text}`).toBeLessThan(300);
  return answer.body;
}

beforeAll(async () => {
  api = await startTestApi({}, { scheduleClock: clock });
}, 60_000);

afterAll(async () => {
  await api?.stop();
});

describe('instants in answers', () => {
  it('of tools: createdAt and updatedAt in ISO 8601 UTC with milliseconds, created, read, listed and changed', async () => {
    const tool = {
      id: 'stamped',
      steps: [{ id: 'one', config: { type: 'transform', transformCode: '() => 1' } }],
    };
    expectOneFormat(await ok('POST', '/v1/tools', tool), ['$.createdAt', '$.updatedAt']);
    expectOneFormat(await ok('GET', '/v1/tools/stamped'), ['$.createdAt', '$.updatedAt']);
    expectOneFormat(await ok('GET', '/v1/tools'), ['$.data[0].createdAt', '$.data[0].updatedAt']);
    const changed = await ok<{ createdAt: string; updatedAt: string }>('PUT', '/v1/tools/stamped', {
      name: 'Stamped',
    });
    expectOneFormat(changed, ['$.createdAt', '$.updatedAt']);
    expect(changed.updatedAt >= changed.createdAt).toBe(true);
  });

  it('of systems: createdAt and updatedAt in ISO 8601 UTC with milliseconds, in every answer that has them', async () => {
    const system = { id: 'stamped-crm', url: 'http://127.0.0.1:9', credentials: { apiKey: 'k-1' } };
    const named = ['$.data.createdAt', '$.data.updatedAt'];
    expectOneFormat(await ok('POST', '/v1/systems', system), named);
    expectOneFormat(await ok('GET', '/v1/systems/stamped-crm'), named);
    expectOneFormat(await ok('PATCH', '/v1/systems/stamped-crm', { name: 'CRM' }), named);
    expectOneFormat(await ok('GET', '/v1/systems'), ['$.data[0].createdAt', '$.data[0].updatedAt']);
    expectOneFormat(await ok('GET', '/v1/credentials?systemId=stamped-crm'), [
      '$.data.items[0].createdAt',
      '$.data.items[0].updatedAt',
    ]);
  });

  it("of schedules: createdAt, updatedAt, nextRunAt, and once a tick ran lastRunAt and the tick's time", async () => {
    await createEchoTool(api, 'stamped-echo');
    const created = await createSchedule(api, 'stamped-echo', { cronExpression: '* * * * *' });
    const path = `/v1/tools/stamped-echo/schedules/${created.id}`;
    expectOneFormat(created, ['$.createdAt', '$.updatedAt', '$.nextRunAt']);
    expectOneFormat(await ok('PUT', path, { payload: { n: 1 } }), ['$.createdAt', '$.updatedAt']);

    clock.set(at(base, 1, 1));
    const ticked = await untilTick(api, 'stamped-echo', created.id, at(base, 1));
    expectOneFormat(ticked, ['$.createdAt', '$.updatedAt', '$.nextRunAt', '$.lastRunAt', '$.lastTick.at']);
    expectOneFormat(await ok('GET', '/v1/schedules'), ['$.data[0].createdAt', '$.data[0].lastRunAt']);
    // Its run answers in the same format, as runs always have.
    const runId = ticked.lastRunId as string;
    expectOneFormat(await waitForRun(api, runId), ['$.metadata.startedAt', '$.metadata.completedAt']);
  });
});
