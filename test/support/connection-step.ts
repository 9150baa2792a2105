/**
 * Calling a connection protocol's step (Postgres, MySQL, Redis) directly, as the engine would: what the
 * step tests of test/integration/engine/ share.
 */
import type { JsonValue } from '../../contract/json.ts';
import type { ConnectionStepRequest } from '../../engine/protocols/connection-step.ts';

/**
 * A step caller: `step(body, overrides)` runs `execute` with the body, a fresh signal, a 20 s deadline and
 * no credentials or modify unless `defaults` (read at each call, after the fixtures started) say otherwise.
 */
export function stepCaller(
  execute: (request: ConnectionStepRequest) => Promise<JsonValue>,
  defaults: () => Pick<ConnectionStepRequest, 'url'> & Partial<ConnectionStepRequest>,
): (body: unknown, overrides?: Partial<ConnectionStepRequest>) => Promise<unknown> {
  return (body, overrides = {}) =>
    execute({
      credentials: {},
      modify: false,
      signal: new AbortController().signal,
      deadline: Date.now() + 20_000,
      ...defaults(),
      body,
      ...overrides,
    });
}

/** The error a step fails with, when it is of the protocol's error class (any other failure is rethrown). */
export async function stepRejection<E extends Error>(
  promise: Promise<unknown>,
  errorClass: abstract new (...args: never[]) => E,
): Promise<E> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof errorClass) return error;
    throw error;
  }
  throw new Error('expected the step to fail');
}
