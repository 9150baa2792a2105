/**
 * Persistent tool state between the process that stores it and the engine that runs the tool: the run
 * order carries the state the run reads (RunOrder.persistedState), the engine's result carries what the run
 * changed (RunStateChanges), from a worker of the pool or from a runner Pod (`PUT …/result`). The engine
 * never sees the store; the process that writes the run's terminal state commits the changes (tools/state.ts).
 */
import { z } from 'zod';
import { JsonValue } from '../json.ts';

/**
 * One key the run changed: its value when the run read the state (`before`, absent: the key did not
 * exist) and when the run ended (`after`, absent: the run deleted it). `before` is what the commit
 * compares with the stored value: a key another run changed in the meantime is not overwritten.
 */
export const StateWrite = z.strictObject({
  key: z.string(),
  before: JsonValue.optional(),
  after: JsonValue.optional(),
});
export type StateWrite = z.infer<typeof StateWrite>;

/** What a run did to its tool's state, as the engine reports it. */
export const RunStateChanges = z.strictObject({
  /** The version of the state the run read (RunOrder.stateVersion), echoed for the run record. */
  versionRead: z.number().int().min(0).optional(),
  /** The keys the run changed; empty when it changed none or the engine refused the write (see warnings). */
  writes: z.array(StateWrite),
  /** Why (part of) the run's state write was refused, for the run record's metadata.warnings. */
  warnings: z.array(z.string()),
});
export type RunStateChanges = z.infer<typeof RunStateChanges>;
