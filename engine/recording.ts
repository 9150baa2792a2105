/**
 * A run's recording (contract/api/recording.ts): a decorator over the engine's outbound seam (Protocols)
 * that keeps every exchange a request step has, in the form a replay will compare and answer from. What
 * is kept is redacted as step results are, and more: a request's credentials are blanked where the
 * engine knows they travel (system auth headers and query parameters, credential-carrying ones), a
 * connection URL loses its password, and every credential value of the run is replaced by its
 * placeholder wherever else it occurs (URL, headers, body, the answer). A file is kept as its reference
 * and digest, without its bytes. Past the size cap exchanges are left out and counted; the run goes on.
 */
import { createHash } from 'node:crypto';
import type { RecordedExchange, Recording } from '../contract/api/recording.ts';
import type { JsonObject, JsonValue } from '../contract/json.ts';
import type { ConnectionProtocol } from '../contract/step-protocols.ts';
import { jsonBytes } from './data-size.ts';
import { isFileRef } from './file-ref.ts';
import type { Redactor } from './redact.ts';
import {
  type ConnectionCall,
  connectionSteps,
  type HttpCall,
  type HttpReply,
  type ProtocolContext,
  type Protocols,
} from './types.ts';

/** What a blanked credential (a header or query parameter that carries one) is recorded as. */
export const BLANKED = '<<redacted>>';

/** Headers that carry a credential whoever set them. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization']);

/** Which exchange a protocol call is, for the recording (ProtocolContext.exchange). */
export interface ExchangeKey {
  stepId: string;
  /** The loop item's index. */
  item?: number | undefined;
  /** The page of a paginated step, from 1. */
  page?: number | undefined;
}

/** A URL without the password of its user info (a connection URL's), else as it is. */
export function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** An HTTP request as recorded: credential headers and query parameters blanked, every credential value replaced. */
export function recordedHttpRequest(call: HttpCall, redactor: Redactor): RecordedExchange['request'] {
  const headers = new Set((call.credentialHeaders ?? []).map((name) => name.toLowerCase()));
  const query = new Set(call.credentialQueryParams ?? []);
  return {
    method: call.method,
    url: redactor.string(withoutPassword(call.url)),
    query: call.query.map(([name, value]) => [name, query.has(name) ? BLANKED : redactor.string(value)]),
    headers: Object.fromEntries(
      Object.entries(call.headers).map(([name, value]) => {
        const lower = name.toLowerCase();
        return [name, headers.has(lower) || CREDENTIAL_HEADERS.has(lower) ? BLANKED : redactor.string(value)];
      }),
    ),
    ...(call.body !== undefined ? { body: redactor.value(call.body) } : {}),
  };
}

/** A connection protocol's request as recorded: its URL without a password, its body redacted. */
export function recordedConnectionRequest(
  call: ConnectionCall,
  redactor: Redactor,
): RecordedExchange['request'] {
  const body = call.body as JsonValue | undefined;
  return {
    url: redactor.string(withoutPassword(call.url)),
    ...(body !== undefined ? { body: redactor.value(body) } : {}),
  };
}

/** Data with every file reference's bytes replaced by their SHA-256 (a recording keeps no file content). */
export function withoutFileBytes(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(withoutFileBytes);
  if (value === null || typeof value !== 'object') return value;
  if (isFileRef(value)) {
    const { contentBase64, ...ref } = value as unknown as JsonObject & { contentBase64: string };
    const sha256 = createHash('sha256').update(Buffer.from(contentBase64, 'base64')).digest('hex');
    return { ...ref, sha256 };
  }
  return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, withoutFileBytes(child)]));
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

interface Kept {
  entry: RecordedExchange;
  seq: number;
}

/** The exchanges of one run, within `maxBytes` (their size as UTF-8 JSON). */
export class RunRecorder {
  readonly #redactor: Redactor;
  readonly #maxBytes: number;
  /** Step ids in the tool's order: the recording is sorted by step, then item, then when it happened. */
  readonly #stepIndex: Map<string, number>;
  readonly #kept: Kept[] = [];
  #bytes = 0;
  #seq = 0;
  #leftOut: { exchanges: number; bytes: number; steps: string[] } | undefined;

  constructor(redactor: Redactor, maxBytes: number, stepIds: readonly string[]) {
    this.#redactor = redactor;
    this.#maxBytes = maxBytes;
    this.#stepIndex = new Map(stepIds.map((id, index) => [id, index]));
  }

  http(
    key: ExchangeKey | undefined,
    call: HttpCall,
    outcome: { reply: HttpReply } | { error: unknown },
  ): void {
    const redactor = this.#redactor;
    const request = recordedHttpRequest(call, redactor);
    if ('reply' in outcome) {
      const { status, headers, data } = outcome.reply;
      this.#add(key, 'http', request, {
        response: { status, headers: redactor.value(headers), data: redactor.value(withoutFileBytes(data)) },
      });
      return;
    }
    // A status error keeps what the server answered (its body as read, redacted already by the client).
    const error = outcome.error as { status?: unknown; headers?: unknown; body?: unknown };
    const answered =
      typeof error.status === 'number'
        ? {
            response: {
              status: error.status,
              ...(error.headers && typeof error.headers === 'object'
                ? { headers: redactor.value(error.headers as Record<string, string>) }
                : {}),
              ...(typeof error.body === 'string' ? { data: redactor.string(error.body) } : {}),
            },
          }
        : {};
    this.#add(key, 'http', request, { ...answered, error: redactor.string(messageOf(outcome.error)) });
  }

  connection(
    key: ExchangeKey | undefined,
    protocol: ConnectionProtocol,
    call: ConnectionCall,
    outcome: { data: JsonValue } | { error: unknown },
  ): void {
    const redactor = this.#redactor;
    const request = recordedConnectionRequest(call, redactor);
    this.#add(
      key,
      protocol,
      request,
      'data' in outcome
        ? { response: { data: redactor.value(withoutFileBytes(outcome.data)) } }
        : { error: redactor.string(messageOf(outcome.error)) },
    );
  }

  #add(
    key: ExchangeKey | undefined,
    protocol: RecordedExchange['protocol'],
    request: RecordedExchange['request'],
    outcome: Pick<RecordedExchange, 'response' | 'error'>,
  ): void {
    const stepId = key?.stepId ?? '';
    const entry: RecordedExchange = {
      stepId,
      protocol,
      ...(key?.item !== undefined ? { item: key.item } : {}),
      ...(key?.page !== undefined ? { page: key.page } : {}),
      request,
      ...outcome,
    };
    const bytes = jsonBytes(entry as JsonValue) + (this.#kept.length > 0 ? 1 : 0);
    // Once one is left out, every later one is too: what is kept is the run up to that point.
    if (this.#leftOut || this.#bytes + 2 + bytes > this.#maxBytes) {
      this.#leftOut ??= { exchanges: 0, bytes: 0, steps: [] };
      this.#leftOut.exchanges += 1;
      this.#leftOut.bytes += bytes;
      if (!this.#leftOut.steps.includes(stepId)) this.#leftOut.steps.push(stepId);
      return;
    }
    this.#bytes += bytes;
    this.#kept.push({ entry, seq: this.#seq++ });
  }

  recording(): Recording {
    const order = (entry: RecordedExchange) => this.#stepIndex.get(entry.stepId) ?? Number.MAX_SAFE_INTEGER;
    const entries = [...this.#kept]
      .sort(
        (a, b) =>
          order(a.entry) - order(b.entry) || (a.entry.item ?? -1) - (b.entry.item ?? -1) || a.seq - b.seq,
      )
      .map((kept) => kept.entry);
    const leftOut = this.#leftOut;
    return {
      exchanges: entries.length,
      bytes: entries.length > 0 ? this.#bytes + 2 : 2,
      truncated: leftOut !== undefined,
      ...(leftOut ? { leftOut: { ...leftOut, steps: this.#inRunOrder(leftOut.steps) } } : {}),
      entries,
    };
  }

  #inRunOrder(steps: string[]): string[] {
    const order = (id: string) => this.#stepIndex.get(id) ?? Number.MAX_SAFE_INTEGER;
    return [...steps].sort((a, b) => order(a) - order(b));
  }
}

/** `protocols` with every call kept by `recorder` under the exchange its context names. */
export function recordingProtocols(protocols: Protocols, recorder: RunRecorder): Protocols {
  const connection =
    (protocol: ConnectionProtocol) =>
    async (call: ConnectionCall, ctx: ProtocolContext): Promise<JsonValue> => {
      try {
        const data = await protocols[protocol](call, ctx);
        recorder.connection(ctx.exchange, protocol, call, { data });
        return data;
      } catch (error) {
        recorder.connection(ctx.exchange, protocol, call, { error });
        throw error;
      }
    };
  return {
    async http(call, ctx) {
      try {
        const reply = await protocols.http(call, ctx);
        recorder.http(ctx.exchange, call, { reply });
        return reply;
      } catch (error) {
        recorder.http(ctx.exchange, call, { error });
        throw error;
      }
    },
    ...connectionSteps(connection),
  };
}

/** `recording` with every exchange left out: what is kept of it when it cannot travel (a result too large to send). */
export function leftOutAll(recording: Recording): Recording {
  const steps = [
    ...new Set([...recording.entries.map((entry) => entry.stepId), ...(recording.leftOut?.steps ?? [])]),
  ];
  return {
    exchanges: 0,
    bytes: 2,
    truncated: true,
    leftOut: {
      exchanges: recording.exchanges + (recording.leftOut?.exchanges ?? 0),
      bytes: recording.bytes + (recording.leftOut?.bytes ?? 0),
      steps,
    },
    entries: [],
  };
}
