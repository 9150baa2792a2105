/**
 * The bounds of schedules written through REST: how many one tool may have
 * (KUBEGLUE_MAX_SCHEDULES_PER_TOOL) and how many one API key may hold (KUBEGLUE_MAX_SCHEDULES_PER_KEY),
 * each refused past its limit with KG_ERR_SCHEDULE_LIMIT naming the setting; deleting one makes room.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../../contract/api/bodies.ts';
import type { ToolSchedule } from '../../../contract/api/schedule.ts';
import { useTestApi } from '../../support/embedded.ts';
import { createEchoTool } from '../../support/schedules.ts';

const api = useTestApi({ KUBEGLUE_MAX_SCHEDULES_PER_TOOL: '3', KUBEGLUE_MAX_SCHEDULES_PER_KEY: '4' });
let key: string;

const post = (toolId: string, withKey?: string) =>
  api.call<ToolSchedule & ErrorBody>('POST', `/v1/tools/${toolId}/schedules`, {
    body: { cronExpression: '0 9 * * *' },
    ...(withKey ? { key: withKey } : {}),
  });

beforeAll(async () => {
  for (const id of ['a', 'b', 'c']) await createEchoTool(api, id);
  const created = await api.call<{ key: string }>('POST', '/v1/api-keys', {
    body: { name: 'scheduler', scopes: ['tools:read', 'tools:write', 'runs:read', 'runs:execute'] },
  });
  key = created.body.key;
});

describe('schedule limits', () => {
  it('refuses a schedule past the most one tool may have, whoever writes it', async () => {
    expect((await post('a', key)).status).toBe(201);
    expect((await post('a')).status).toBe(201);
    const third = await post('a');
    expect(third.status).toBe(201);
    const refused = await post('a');
    expect([refused.status, refused.body.error.code]).toEqual([422, 'KG_ERR_SCHEDULE_LIMIT']);
    expect(refused.body.error.message).toContain("Tool 'a' has 3 schedules");
    expect(refused.body.error.message).toContain('KUBEGLUE_MAX_SCHEDULES_PER_TOOL');
    // Deleting one makes room again.
    await api.call('DELETE', `/v1/tools/a/schedules/${third.body.id}`);
    expect((await post('a')).status).toBe(201);
  });

  it('refuses a schedule past the most one key may hold, over every tool, also one it takes over', async () => {
    // The key holds one of tool a's already; three more across tools b and c reach its limit of four.
    for (const toolId of ['b', 'b', 'c']) expect((await post(toolId, key)).status).toBe(201);
    const refused = await post('c', key);
    expect([refused.status, refused.body.error.code]).toEqual([422, 'KG_ERR_SCHEDULE_LIMIT']);
    expect(refused.body.error.message).toContain('KUBEGLUE_MAX_SCHEDULES_PER_KEY');
    // Another key's schedule changed by this key would run with its rights: that counts too.
    const admins = await post('c');
    expect(admins.status).toBe(201);
    const takeOver = await api.call<ErrorBody>('PUT', `/v1/tools/c/schedules/${admins.body.id}`, {
      key,
      body: { enabled: false },
    });
    expect([takeOver.status, takeOver.body.error.code]).toEqual([422, 'KG_ERR_SCHEDULE_LIMIT']);
    // Its own schedules it still changes.
    const { body } = await api.call<{ data: ToolSchedule[] }>('GET', '/v1/tools/b/schedules', { key });
    const own = await api.call('PUT', `/v1/tools/b/schedules/${body.data[0]?.id}`, {
      key,
      body: { enabled: false },
    });
    expect(own.status).toBe(200);
  });
});
