import type { Me } from '../../contract/api/bodies.ts';
import { principalOf } from '../auth.ts';
import type { HandlersOf } from './register.ts';

/** `GET /v1/me`: who the calling key is and what it may do (superglue's `sg whoami` reads userId and roleIds). */
export const meHandlers: HandlersOf<'getMe'> = {
  getMe: async (_input, request): Promise<Me> => {
    const { id, name, admin, scopes, toolIds, systemIds } = principalOf(request);
    return { id, name, admin, scopes, toolIds, systemIds, userId: id, roleIds: [admin ? 'admin' : 'member'] };
  },
};
