/**
 * A replay (RunOrder.replay): the engine's outbound seam (Protocols) answered from a run's recording, with
 * no network. Each call finds its exchange by step, loop item and page (ProtocolContext.exchange), in the
 * order they were recorded; its request, redacted as recording.ts redacts it, must be the recorded one
 * (method, URL, query and body; headers are not compared: trace headers differ on every run). Templates,
 * pagination, loops and transforms run for real. The order carries no credential: each credential value
 * is its own placeholder (`<<systemId_key>>`), so a redacted request compares with the recorded one.
 */
import { isDeepStrictEqual } from 'node:util';
import type { RecordedExchange, Recording } from '../contract/api/recording.ts';
import type { JsonValue } from '../contract/json.ts';
import type { ConnectionProtocol } from '../contract/step-protocols.ts';
import { BLANKED, recordedConnectionRequest, recordedHttpRequest } from './recording.ts';
import type { Redactor } from './redact.ts';
import { connectionSteps, type ProtocolContext, type Protocols } from './types.ts';

/** How much of a differing value an error message shows. */
const SHOWN_CHARS = 300;

function shown(value: unknown): string {
  const text = value === undefined ? '(none)' : JSON.stringify(value);
  return text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}…` : text;
}

function exchangeName(key: ProtocolContext['exchange']): string {
  if (!key) return 'a call outside any step';
  const parts = [`step ${key.stepId}`];
  if (key.item !== undefined) parts.push(`loop item ${key.item}`);
  if (key.page !== undefined) parts.push(`page ${key.page}`);
  return parts.join(', ');
}

/**
 * `query` with each parameter the recording blanked (a credential: BLANKED) blanked too: a credential is
 * not compared, and the replay's placeholders are not recognised as credentials where they are rendered.
 */
function unblanked(recorded: RecordedExchange['request'], query: [string, string][]): [string, string][] {
  const before = 'query' in recorded ? recorded.query : [];
  return query.map(([name, value], index) => {
    const then = before[index];
    return then && then[0] === name && then[1] === BLANKED ? [name, BLANKED] : [name, value];
  });
}

/** What differs between a request and the recorded one, field by field; empty when they are the same. */
export function requestDifferences(
  recorded: RecordedExchange['request'],
  now: RecordedExchange['request'],
): string[] {
  const fields = ['method', 'url', 'query', 'body'] as const;
  const differences: string[] = [];
  const compared = { ...now, ...('query' in now ? { query: unblanked(recorded, now.query) } : {}) };
  for (const field of fields) {
    const before = (recorded as Record<string, unknown>)[field];
    const after = (compared as Record<string, unknown>)[field];
    if (!isDeepStrictEqual(before, after)) {
      differences.push(`${field}: recorded ${shown(before)}, now ${shown(after)}`);
    }
  }
  return differences;
}

/** The error of a replayed call that cannot be answered from the recording; it fails the call's step. */
export class ReplayMismatch extends Error {}

/** The exchanges of a recording, each answered once, in the order recorded. */
class RecordedExchanges {
  readonly #byKey = new Map<string, RecordedExchange[]>();
  readonly #recording: Recording;

  constructor(recording: Recording) {
    this.#recording = recording;
    for (const entry of recording.entries) {
      const key = RecordedExchanges.key(entry);
      const list = this.#byKey.get(key) ?? [];
      list.push(entry);
      this.#byKey.set(key, list);
    }
  }

  static key(key: { stepId: string; item?: number | undefined; page?: number | undefined }): string {
    return JSON.stringify([key.stepId, key.item ?? null, key.page ?? null]);
  }

  /** The next recorded exchange of this call; throws ReplayMismatch naming what was not recorded. */
  take(ctx: ProtocolContext, protocol: RecordedExchange['protocol']): RecordedExchange {
    const key = ctx.exchange;
    const entry = key ? this.#byKey.get(RecordedExchanges.key(key))?.shift() : undefined;
    if (entry) {
      if (entry.protocol !== protocol) {
        throw new ReplayMismatch(
          `replay: ${exchangeName(key)} calls ${protocol}, but the recorded exchange is ${entry.protocol}`,
        );
      }
      return entry;
    }
    const leftOut = this.#recording.leftOut;
    if (key && leftOut?.steps.includes(key.stepId)) {
      throw new ReplayMismatch(
        `replay: ${exchangeName(key)} was not recorded: the recording was truncated at its size cap (KUBEGLUE_MAX_RECORDING_BYTES) and left out ${leftOut.exchanges} exchange(s) of steps ${leftOut.steps.join(', ')}`,
      );
    }
    throw new ReplayMismatch(
      `replay: no recorded exchange for ${exchangeName(key)} (the run did not make this call: a new step, another page or another loop item needs the network)`,
    );
  }
}

function answerOf(entry: RecordedExchange): JsonValue {
  if (entry.error !== undefined) throw new ReplayMismatch(`recorded failure: ${entry.error}`);
  return entry.response?.data ?? null;
}

/** Protocols that answer from `recording` only; `redactor` is the replay's (placeholders as credentials). */
export function replayProtocols(recording: Recording, redactor: Redactor): Protocols {
  const exchanges = new RecordedExchanges(recording);
  const check = (
    key: ProtocolContext['exchange'],
    entry: RecordedExchange,
    now: RecordedExchange['request'],
  ) => {
    const differences = requestDifferences(entry.request, now);
    if (differences.length > 0) {
      throw new ReplayMismatch(
        `replay: the request of ${exchangeName(key)} differs from the recorded one: ${differences.join('; ')}`,
      );
    }
  };
  const connection =
    (protocol: ConnectionProtocol) =>
    async (call: Parameters<Protocols['postgres']>[0], ctx: ProtocolContext): Promise<JsonValue> => {
      const entry = exchanges.take(ctx, protocol);
      check(ctx.exchange, entry, recordedConnectionRequest(call, redactor));
      return answerOf(entry);
    };
  return {
    async http(call, ctx) {
      const entry = exchanges.take(ctx, 'http');
      check(ctx.exchange, entry, recordedHttpRequest(call, redactor));
      if (entry.error !== undefined || !entry.response || entry.response.status === undefined) {
        throw new ReplayMismatch(`recorded failure: ${entry.error ?? 'no response was recorded'}`);
      }
      return {
        status: entry.response.status,
        headers: entry.response.headers ?? {},
        data: entry.response.data ?? null,
      };
    },
    ...connectionSteps(connection),
  };
}
