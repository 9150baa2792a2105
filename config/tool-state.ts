/** Bounds of the persistent tool state (docs/state.md), applied where it is written: runs and PUT. */
import { positiveInt } from './schemas.ts';
import { API_ROLES, section, setting } from './setting.ts';

export const TOOL_STATE = section(
  'Persistent tool state',
  "Bounds of a tool's persistent state (`sourceData.persistedState`, [state](state.md)). A run whose " +
    'changes would pass one saves none of them and gets a warning; `PUT /v1/tools/{id}/state` is refused.',
  {
    toolState: {
      maxKeys: setting(
        'KUBEGLUE_TOOL_STATE_MAX_KEYS',
        positiveInt,
        '100',
        API_ROLES,
        'keys of one tool state',
      ),
      maxValueBytes: setting(
        'KUBEGLUE_TOOL_STATE_MAX_VALUE_BYTES',
        positiveInt,
        String(64 * 1024),
        API_ROLES,
        'size of one value of a tool state, as UTF-8 JSON',
      ),
    },
  },
);
