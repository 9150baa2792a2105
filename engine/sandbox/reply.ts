import { z } from 'zod';
import type { JsonValue } from '../../contract/json.ts';
import { WEBASSEMBLY_UNAVAILABLE } from './driver.ts';
import { SandboxError } from './errors.ts';

/** The failure record the driver writes after its `E` marker (see driver.ts). */
const FailureRecord = z.object({
  kind: z.enum(['compile', 'runtime']),
  message: z.string(),
  name: z.string().optional(),
  line: z.number().int().positive().optional(),
  column: z.number().int().positive().optional(),
});

/** Turns the driver's answer into the function's JSON result, or throws the SandboxError it describes. */
export function decodeReply(reply: unknown, label: string | undefined): JsonValue {
  if (typeof reply !== 'string') {
    throw new SandboxError('runtime', 'the sandbox driver returned no result', { label });
  }
  // JSON text never starts with `E`; the driver marks failures with it.
  const failed = reply.charCodeAt(0) === 69;
  let value: unknown;
  try {
    value = JSON.parse(failed ? reply.slice(1) : reply);
  } catch {
    throw new SandboxError('runtime', 'the sandbox driver returned unreadable JSON', { label });
  }
  if (!failed) return value as JsonValue;
  const parsed = FailureRecord.safeParse(value);
  if (!parsed.success) {
    throw new SandboxError('runtime', 'the sandbox driver returned an unreadable failure', { label });
  }
  const failure = parsed.data;
  // isolated-vm's allocator refuses ArrayBuffers past the memory limit; the isolate survives that.
  const refusedMemory = failure.name === 'RangeError' && failure.message === 'Array buffer allocation failed';
  // The driver deletes WebAssembly (driver.ts): say why it is missing.
  const noWebAssembly = failure.name === 'ReferenceError' && failure.message === 'WebAssembly is not defined';
  const message = noWebAssembly ? `${failure.message} (${WEBASSEMBLY_UNAVAILABLE})` : failure.message;
  throw new SandboxError(refusedMemory ? 'memory' : failure.kind, message, {
    label,
    errorName: failure.name,
    line: failure.line,
    column: failure.column,
  });
}
