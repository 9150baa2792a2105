/**
 * What a recording keeps of a request and an answer (engine/recording.ts): credentials blanked where they
 * travel, every credential value replaced wherever else it is, connection URLs without their password,
 * files without their bytes, and the size cap.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../contract/json.ts';
import { fileRefFromBytes } from '../../../engine/file-ref.ts';
import {
  BLANKED,
  leftOutAll,
  RunRecorder,
  recordedConnectionRequest,
  recordedHttpRequest,
  withoutFileBytes,
} from '../../../engine/recording.ts';
import { Redactor } from '../../../engine/redact.ts';
import type { HttpCall } from '../../../engine/types.ts';

const TOKEN = 'tok-SECRET-9a8b7c';
const KEY = 'key-SECRET-123456';
const PASSWORD = 'pw-SECRET-db-42';

function redactor(): Redactor {
  const r = new Redactor();
  r.add(TOKEN, '<<crm_bearerToken>>');
  r.add(KEY, '<<crm_apiKey>>');
  r.add(PASSWORD, '<<db_password>>');
  return r;
}

function call(overrides: Partial<HttpCall> = {}): HttpCall {
  return {
    method: 'POST',
    url: `https://api.example.com/v1/${KEY}/items`,
    headers: {
      Authorization: `Bearer ${TOKEN}`,
      'X-Api-Key': KEY,
      'X-Trace': `trace ${TOKEN}`,
      Accept: 'json',
    },
    query: [
      ['key', KEY],
      ['page', '2'],
      ['note', `has ${TOKEN} inside`],
    ],
    body: { login: { token: TOKEN }, text: 'plain' },
    retry: true,
    credentialHeaders: ['x-api-key'],
    credentialQueryParams: ['key'],
    ...overrides,
  };
}

describe('a recorded HTTP request', () => {
  it('blanks the headers and query parameters that carry a credential, and the Authorization header always', () => {
    const request = recordedHttpRequest(call({ credentialHeaders: ['X-Api-Key'] }), redactor());
    expect(request).toMatchObject({
      headers: { Authorization: BLANKED, 'X-Api-Key': BLANKED, Accept: 'json' },
      query: [
        ['key', BLANKED],
        ['page', '2'],
        ['note', 'has <<crm_bearerToken>> inside'],
      ],
    });
  });

  it('replaces every credential value elsewhere: URL, other headers, body', () => {
    const request = recordedHttpRequest(call(), redactor());
    expect(request).toMatchObject({
      method: 'POST',
      url: 'https://api.example.com/v1/<<crm_apiKey>>/items',
      headers: { 'X-Trace': 'trace <<crm_bearerToken>>' },
      body: { login: { token: '<<crm_bearerToken>>' }, text: 'plain' },
    });
    const text = JSON.stringify(request);
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(KEY);
  });

  it('drops the password of a URL with user info and keeps a request without a body without one', () => {
    const request = recordedHttpRequest(
      call({ url: 'https://ada:hunter22@api.example.com/x', body: undefined }),
      redactor(),
    );
    expect(request.url).toBe('https://ada@api.example.com/x');
    expect('body' in request).toBe(false);
  });
});

describe('a recorded connection request', () => {
  it('keeps the URL without its password and the body with credential values replaced', () => {
    const request = recordedConnectionRequest(
      {
        url: `postgres://reader:${PASSWORD}@db.example.com:5432/sales`,
        body: { query: 'SELECT $1', params: [PASSWORD, 3] },
        credentials: { password: PASSWORD },
        modify: false,
      },
      redactor(),
    );
    expect(request).toEqual({
      url: 'postgres://reader@db.example.com:5432/sales',
      body: { query: 'SELECT $1', params: ['<<db_password>>', 3] },
    });
    expect(JSON.stringify(request)).not.toContain('credentials');
  });
});

describe('recorded answers', () => {
  it('keep a file as its reference and digest, without its bytes', () => {
    const bytes = Buffer.from('a,b\n1,2\n');
    const data = { file: fileRefFromBytes(bytes, 'x.csv', 'text/csv') as unknown as JsonObject, rows: 2 };
    expect(withoutFileBytes(data)).toEqual({
      file: {
        __file__: true,
        filename: 'x.csv',
        contentType: 'text/csv',
        size: bytes.byteLength,
        sha256: createHash('sha256').update(bytes).digest('hex'),
      },
      rows: 2,
    });
  });

  it('are redacted, a failed call keeps its status and redacted message', () => {
    const recorder = new RunRecorder(redactor(), Number.POSITIVE_INFINITY, ['a']);
    recorder.http({ stepId: 'a' }, call(), {
      reply: { status: 200, headers: { 'x-echo': TOKEN }, data: { echoed: `Bearer ${TOKEN}` } },
    });
    recorder.http({ stepId: 'a', page: 2 }, call(), {
      error: Object.assign(new Error(`401 for key ${KEY}`), { status: 401, body: `bad ${TOKEN}` }),
    });
    const recording = recorder.recording();
    expect(recording.entries[0]?.response).toEqual({
      status: 200,
      headers: { 'x-echo': '<<crm_bearerToken>>' },
      data: { echoed: 'Bearer <<crm_bearerToken>>' },
    });
    expect(recording.entries[1]).toMatchObject({
      page: 2,
      response: { status: 401, data: 'bad <<crm_bearerToken>>' },
      error: '401 for key <<crm_apiKey>>',
    });
    expect(JSON.stringify(recording)).not.toMatch(/SECRET/);
  });
});

describe('the size cap', () => {
  const answer = { reply: { status: 200, headers: {}, data: 'x'.repeat(400) } };

  it('keeps the run up to the first exchange past it, counts what it left out, and sorts by step and item', () => {
    const one = new RunRecorder(new Redactor(), Number.POSITIVE_INFINITY, ['first']);
    one.http({ stepId: 'first' }, call(), answer);
    // Room for two such exchanges and a small one, not for a third.
    const cap = 2 * one.recording().bytes + 200;
    const recorder = new RunRecorder(new Redactor(), cap, ['first', 'loop']);
    recorder.http({ stepId: 'first' }, call(), answer);
    recorder.http({ stepId: 'loop', item: 1 }, call(), answer);
    recorder.http({ stepId: 'loop', item: 0 }, call(), answer);
    // Small enough for the room left: left out all the same.
    const small = call({ url: 'https://a.example/', headers: {}, query: [], body: undefined });
    recorder.http({ stepId: 'loop', item: 2 }, small, { reply: { status: 200, headers: {}, data: 1 } });
    const recording = recorder.recording();
    expect(recording.truncated).toBe(true);
    expect(recording.entries.map((e) => [e.stepId, e.item])).toEqual([
      ['first', undefined],
      ['loop', 1],
    ]);
    expect(recording.exchanges).toBe(2);
    expect(recording.bytes).toBe(Buffer.byteLength(JSON.stringify(recording.entries)));
    expect(recording.bytes).toBeLessThanOrEqual(cap);
    // The small last one is left out too: what is kept is the run up to the first one left out.
    expect(recording.leftOut).toMatchObject({ exchanges: 2, steps: ['loop'] });
  });

  it('leaves everything out when a recording cannot travel, saying how much', () => {
    const recorder = new RunRecorder(new Redactor(), Number.POSITIVE_INFINITY, ['a']);
    recorder.http({ stepId: 'a' }, call(), answer);
    const all = recorder.recording();
    expect(leftOutAll(all)).toEqual({
      exchanges: 0,
      bytes: 2,
      truncated: true,
      leftOut: { exchanges: 1, bytes: all.bytes, steps: ['a'] },
      entries: [],
    });
  });
});
