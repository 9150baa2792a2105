/**
 * A replay's protocols (engine/replay.ts): each call answered from the recorded exchange of its step, loop
 * item and page, once; a request that differs, one with no exchange left, and one the recording's cap left
 * out each fail naming what; a credential the recording blanked is not compared.
 */
import { describe, expect, it } from 'vitest';
import type { RecordedExchange, Recording } from '../../../contract/api/recording.ts';
import { Redactor } from '../../../engine/redact.ts';
import { replayProtocols } from '../../../engine/replay.ts';
import type { HttpCall, ProtocolContext } from '../../../engine/types.ts';

function redactor(): Redactor {
  // As in a replay: the credential is its own placeholder.
  const r = new Redactor();
  r.add('<<crm_apiKey>>', '<<crm_apiKey>>');
  return r;
}

function exchange(overrides: Partial<RecordedExchange> = {}): RecordedExchange {
  return {
    stepId: 'list',
    protocol: 'http',
    page: 1,
    request: {
      method: 'GET',
      url: 'https://api.example.com/items',
      query: [['key', '<<redacted>>']],
      headers: {},
    },
    response: { status: 200, headers: { 'x-page': '1' }, data: [{ id: 1 }] },
    ...overrides,
  };
}

function recording(entries: RecordedExchange[], leftOut?: Recording['leftOut']): Recording {
  return {
    exchanges: entries.length,
    bytes: 100,
    truncated: leftOut !== undefined,
    ...(leftOut ? { leftOut } : {}),
    entries,
  };
}

function call(overrides: Partial<HttpCall> = {}): HttpCall {
  return {
    method: 'GET',
    url: 'https://api.example.com/items',
    headers: { traceparent: 'differs-every-run' },
    retry: false,
    query: [['key', '<<crm_apiKey>>']],
    ...overrides,
  };
}

function ctx(exchange: ProtocolContext['exchange']): ProtocolContext {
  return { signal: new AbortController().signal, deadline: Date.now() + 60_000, traceId: 't', exchange };
}

describe('replay protocols', () => {
  it('answers a request from its recorded exchange, once, not comparing headers or a blanked credential', async () => {
    const protocols = replayProtocols(recording([exchange()]), redactor());
    await expect(protocols.http(call(), ctx({ stepId: 'list', page: 1 }))).resolves.toEqual({
      status: 200,
      headers: { 'x-page': '1' },
      data: [{ id: 1 }],
    });
    await expect(protocols.http(call(), ctx({ stepId: 'list', page: 1 }))).rejects.toThrow(
      'no recorded exchange for step list, page 1',
    );
  });

  it('fails a request whose URL, query or body differs, showing both values', async () => {
    const protocols = replayProtocols(recording([exchange()]), redactor());
    await expect(
      protocols.http(call({ url: 'https://api.example.com/things' }), ctx({ stepId: 'list', page: 1 })),
    ).rejects.toThrow('url: recorded "https://api.example.com/items", now "https://api.example.com/things"');
  });

  it('names the cap when the exchange a step needs was left out of a truncated recording', async () => {
    const truncated = recording([exchange()], { exchanges: 2, bytes: 5000, steps: ['list', 'detail'] });
    const protocols = replayProtocols(truncated, redactor());
    await expect(protocols.http(call(), ctx({ stepId: 'detail', item: 0 }))).rejects.toThrow(
      'step detail, loop item 0 was not recorded: the recording was truncated at its size cap',
    );
  });

  it('fails again with the recorded error a call failed with, and refuses another protocol', async () => {
    const failed = exchange({ response: undefined, error: 'connect ECONNREFUSED' });
    const protocols = replayProtocols(
      recording([failed, exchange({ stepId: 'rows', page: undefined })]),
      redactor(),
    );
    await expect(protocols.http(call(), ctx({ stepId: 'list', page: 1 }))).rejects.toThrow(
      'recorded failure: connect ECONNREFUSED',
    );
    await expect(
      protocols.postgres(
        { url: 'postgres://db/x', body: {}, credentials: {}, modify: false },
        ctx({ stepId: 'rows' }),
      ),
    ).rejects.toThrow('step rows calls postgres, but the recorded exchange is http');
  });
});
