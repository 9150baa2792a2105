/** `kubeglue schedules`: the schedules of every tool the API key may see, or of one tool. */
import * as routes from '../../../contract/api/route-paths.ts';
import { ScheduleListAnswer } from '../answers.ts';
import { ApiClient } from '../client.ts';
import { command, EXIT } from '../command.ts';
import { printList, shortTime } from '../output.ts';

export const schedules = command({
  name: 'schedules',
  summary: 'list schedules',
  positionals: [],
  options: {
    tool: { type: 'string', value: '<toolId>', help: 'only the schedules of this tool' },
  },
  about: [
    'Lists schedules: id, tool, cron expression, timezone, status (active, disabled, or paused while its',
    'tool is archived), next and last run. --output json prints them as a JSON array of schedules.',
  ],
  examples: ['kubeglue schedules', 'kubeglue schedules --tool nightly-export'],
  async run({ values, output, io }) {
    const client = new ApiClient(await io.connect(), io);
    const found =
      values.tool === undefined
        ? await client.allPages(routes.listSchedules, ScheduleListAnswer, {})
        : await client.allPages(routes.listToolSchedules, ScheduleListAnswer, {
            params: { toolId: values.tool },
          });
    printList(io, output, found, {
      plural: 'schedules',
      headers: ['SCHEDULE', 'TOOL', 'CRON', 'TIMEZONE', 'STATUS', 'NEXT RUN', 'LAST RUN'],
      row: (schedule) => [
        schedule.id,
        schedule.toolId,
        schedule.cronExpression,
        schedule.timezone ?? '-',
        schedule.status ?? (schedule.enabled ? 'active' : 'disabled'),
        shortTime(schedule.nextRunAt),
        shortTime(schedule.lastRunAt),
      ],
    });
    return EXIT.ok;
  },
});
