/**
 * `kubeglue schedules` against a started embedded API: the schedules created through the REST routes
 * superglue's clients call (`POST /v1/tools/{toolId}/schedules`), listed for every tool and for one.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../support/cli.ts';
import { TEST_ADMIN_KEY, useTestApi } from '../../support/embedded.ts';

interface Schedule {
  id: string;
  toolId: string;
  cronExpression: string;
  timezone?: string;
  enabled: boolean;
}

describe('kubeglue schedules', () => {
  const api = useTestApi();

  it('lists the schedules of every tool, or of one, as a table or JSON', async () => {
    const env = { KUBEGLUE_URL: api.url, KUBEGLUE_API_KEY: TEST_ADMIN_KEY };
    const ids: Record<string, string> = {};
    for (const [toolId, cronExpression, timezone, enabled] of [
      ['nightly-export', '0 2 * * *', 'Europe/Berlin', true],
      ['hourly-sync', '@hourly', 'UTC', false],
    ] as const) {
      const tool = { id: toolId, steps: [{ id: 'fetch', config: { url: 'http://127.0.0.1:9/' } }] };
      expect((await api.call('POST', '/v1/tools', { body: tool })).status).toBe(201);
      const created = await api.call<Schedule>('POST', `/v1/tools/${toolId}/schedules`, {
        body: { cronExpression, timezone, enabled },
      });
      expect(created.status).toBeLessThan(300);
      ids[toolId] = created.body.id;
    }

    const all = await runCli(['schedules'], env);
    expect(all.code).toBe(0);
    const lines = all.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^SCHEDULE +TOOL +CRON +TIMEZONE +STATUS +NEXT RUN +LAST RUN$/);
    expect(lines).toHaveLength(3);
    expect(all.stdout).toMatch(
      new RegExp(
        `^${ids['nightly-export']} +nightly-export +0 2 \\* \\* \\* +Europe/Berlin +active +\\d{4}-`,
        'm',
      ),
    );
    expect(all.stdout).toMatch(
      new RegExp(`^${ids['hourly-sync']} +hourly-sync +@hourly +UTC +disabled `, 'm'),
    );

    const one = await runCli(['schedules', '--tool', 'hourly-sync', '--output', 'json'], env);
    expect(one.code).toBe(0);
    expect(JSON.parse(one.stdout)).toEqual([
      expect.objectContaining({ id: ids['hourly-sync'], toolId: 'hourly-sync', cronExpression: '@hourly' }),
    ]);
  });
});
