/** Bounds of tool schedules (docs/schedules.md), applied where they are written: the REST API. */
import { positiveInt } from './schemas.ts';
import { API_ROLES, section, setting } from './setting.ts';

export const SCHEDULES = section(
  'Schedules',
  'Bounds of [schedules](schedules.md) written through REST: a write past one is refused with ' +
    '`KG_ERR_SCHEDULE_LIMIT` or `KG_ERR_SCHEDULE_PAYLOAD_TOO_LARGE`, naming the setting. Schedules applied ' +
    'with kubectl count towards the tool limit but are not refused by it.',
  {
    schedules: {
      maxPerTool: setting(
        'KUBEGLUE_MAX_SCHEDULES_PER_TOOL',
        positiveInt,
        '100',
        API_ROLES,
        'schedules of one tool, whoever wrote them',
      ),
      maxPerKey: setting(
        'KUBEGLUE_MAX_SCHEDULES_PER_KEY',
        positiveInt,
        '500',
        API_ROLES,
        'schedules one API key created or last changed (whose rights their runs carry), over every tool',
      ),
      maxPayloadBytes: setting(
        'KUBEGLUE_MAX_SCHEDULE_PAYLOAD_BYTES',
        positiveInt,
        String(256 * 1024),
        API_ROLES,
        "size of a schedule's payload (the inputs of each of its runs), as UTF-8 JSON: it is stored in the ToolSchedule resource, and a Kubernetes object is at most about 1.5 MiB in etcd",
      ),
    },
  },
);
