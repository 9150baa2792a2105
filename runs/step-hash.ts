/**
 * A step's definition as a hash: equal for equal definitions whatever their key order, so a resumed run
 * (resume.ts) reuses a step's stored result exactly when the step is defined as it was when it ran.
 */
import { createHash } from 'node:crypto';
import type { ToolStep } from '../contract/api/tool.ts';
import { canonical } from './input-hash.ts';

export function stepHash(step: ToolStep): string {
  return createHash('sha256')
    .update(JSON.stringify(canonical(step)))
    .digest('hex');
}
