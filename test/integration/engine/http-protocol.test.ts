import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../contract/json.ts';
import { type FileRef, fileRefBytes, isFileRef } from '../../../engine/file-ref.ts';
import {
  closeHttpAgent,
  type HttpClientOptions,
  type HttpRequest,
  HttpRequestError,
  HttpStatusError,
  httpRequest,
} from '../../../engine/protocols/http.ts';
import { isTraceparent, traceparentFor } from '../../../engine/protocols/traceparent.ts';
import { maskUrl } from '../../../engine/protocols/url-mask.ts';
import { type HttpTarget, startHttpTarget } from '../../support/http-target.ts';

let target: HttpTarget;

beforeAll(async () => {
  target = await startHttpTarget();
});

afterAll(async () => {
  await closeHttpAgent();
  await target.stop();
});

beforeEach(() => target.reset());

function req(path: string, overrides: Partial<HttpRequest> = {}): HttpRequest {
  return {
    method: 'GET',
    url: `${target.url}${path}`,
    headers: {},
    query: [],
    signal: new AbortController().signal,
    deadline: Date.now() + 20_000,
    retry: { enabled: false },
    ...overrides,
  };
}

/** Records backoff waits instead of sleeping, so retry tests do not depend on time. */
function recordingSleep(): { delays: number[]; options: HttpClientOptions } {
  const delays: number[] = [];
  return {
    delays,
    options: {
      sleep: async (ms) => {
        delays.push(ms);
      },
    },
  };
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Error) return error;
    throw new Error(`rejected with a non-error: ${String(error)}`);
  }
  throw new Error('expected the request to fail');
}

function asFile(value: JsonValue): FileRef {
  if (!isFileRef(value)) throw new Error(`expected a file reference, got ${JSON.stringify(value)}`);
  return value;
}

describe('requests', () => {
  it('appends query pairs to the URL and forwards headers', async () => {
    target.route('GET', '/items', { body: { ok: true } });
    const response = await httpRequest(
      req('/items?fixed=1', {
        headers: { 'X-Api-Key': 'k1' },
        query: [
          ['tag', 'a'],
          ['tag', 'b'],
          ['q', 'x y&z'],
        ],
      }),
    );
    expect(response.status).toBe(200);
    expect(response.data).toEqual({ ok: true });
    const seen = target.requests[0];
    expect(seen?.query).toEqual([
      ['fixed', '1'],
      ['tag', 'a'],
      ['tag', 'b'],
      ['q', 'x y&z'],
    ]);
    expect(seen?.headers['x-api-key']).toBe('k1');
  });

  it('sends no body on GET and HEAD', async () => {
    target.route('*', '/nobody', { body: 'fine', headers: { 'content-type': 'text/plain' } });
    await httpRequest(req('/nobody', { method: 'GET', body: { a: 1 } }));
    const head = await httpRequest(req('/nobody', { method: 'HEAD', body: 'x' }));
    expect(head.data).toBeNull();
    expect(target.requests.map((r) => [r.method, r.body.byteLength])).toEqual([
      ['GET', 0],
      ['HEAD', 0],
    ]);
    expect(target.requests[0]?.headers['content-type']).toBeUndefined();
  });

  it('serialises a JSON value body and defaults its content type to application/json', async () => {
    target.route('POST', '/echo', (r) => ({ status: 201, body: r.json }));
    const response = await httpRequest(req('/echo', { method: 'POST', body: { name: 'a', n: [1, 2] } }));
    expect(response.status).toBe(201);
    expect(response.data).toEqual({ name: 'a', n: [1, 2] });
    expect(target.requests[0]?.headers['content-type']).toBe('application/json');
    expect(target.requests[0]?.text).toBe('{"name":"a","n":[1,2]}');
  });

  it('gives a string body that is a JSON object the JSON content type, and plain text none', async () => {
    target.route('*', '/echo', { status: 204 });
    await httpRequest(req('/echo', { method: 'PUT', body: ' [1, 2] ' }));
    await httpRequest(req('/echo', { method: 'POST', body: 'a=1&b=2' }));
    await httpRequest(
      req('/echo', {
        method: 'PATCH',
        body: '{"a":1}',
        headers: { 'Content-Type': 'application/merge-patch+json' },
      }),
    );
    const [put, post, patch] = target.requests;
    expect(put?.headers['content-type']).toBe('application/json');
    expect(put?.text).toBe(' [1, 2] ');
    expect(post?.headers['content-type']).toBeUndefined();
    expect(post?.text).toBe('a=1&b=2');
    expect(patch?.headers['content-type']).toBe('application/merge-patch+json');
  });

  it('sends bytes unchanged', async () => {
    target.route('POST', '/upload', { status: 204 });
    const bytes = new Uint8Array([0, 1, 2, 255]);
    const response = await httpRequest(
      req('/upload', {
        method: 'POST',
        body: bytes,
        headers: { 'content-type': 'application/octet-stream' },
      }),
    );
    expect(response.data).toBeNull();
    expect([...(target.requests[0]?.body ?? [])]).toEqual([0, 1, 2, 255]);
  });

  it('turns URL userinfo into Basic authentication', async () => {
    target.route('GET', '/basic', { status: 204 });
    const url = target.url.replace('http://', 'http://alice:s%3Acret@');
    await httpRequest(req('', { url: `${url}/basic` }));
    const auth = target.requests[0]?.headers.authorization;
    expect(auth).toBe(`Basic ${Buffer.from('alice:s:cret').toString('base64')}`);
  });

  it('returns response header names in lower case', async () => {
    target.route('GET', '/headers', { status: 200, headers: { 'X-Total-Count': '42' }, body: [] });
    const response = await httpRequest(req('/headers'));
    expect(response.headers['x-total-count']).toBe('42');
  });

  it('follows redirects', async () => {
    target.route('GET', '/old', { status: 302, headers: { location: '/new' } });
    target.route('GET', '/new', { body: { moved: true } });
    const response = await httpRequest(req('/old'));
    expect(response.data).toEqual({ moved: true });
  });
});

describe('response parsing', () => {
  it('parses JSON by content type', async () => {
    target.route('GET', '/json', {
      headers: { 'content-type': 'application/vnd.api+json; charset=utf-8' },
      body: '{"data":[{"id":"1"}]}',
    });
    expect((await httpRequest(req('/json'))).data).toEqual({ data: [{ id: '1' }] });
  });

  it('parses XML into an object, keeping values as strings and attributes with @_', async () => {
    target.route('GET', '/xml', {
      headers: { 'content-type': 'application/xml' },
      body: '<?xml version="1.0"?><orders><order id="7"><zip>01234</zip></order><order id="8"><zip>5</zip></order></orders>',
    });
    expect((await httpRequest(req('/xml'))).data).toEqual({
      orders: {
        order: [
          { '@_id': '7', zip: '01234' },
          { '@_id': '8', zip: '5' },
        ],
      },
    });
  });

  it('parses CSV into row objects keyed by the header row', async () => {
    target.route('GET', '/csv', {
      headers: { 'content-type': 'text/csv' },
      body: 'id,name,note\n1,Ann,"a, b"\n2,Bob,\n',
    });
    expect((await httpRequest(req('/csv'))).data).toEqual([
      { id: '1', name: 'Ann', note: 'a, b' },
      { id: '2', name: 'Bob', note: '' },
    ]);
  });

  it('detects a semicolon-delimited CSV', async () => {
    target.route('GET', '/csv-semicolon', { headers: { 'content-type': 'text/csv' }, body: 'a;b\n1;2\n' });
    expect((await httpRequest(req('/csv-semicolon'))).data).toEqual([{ a: '1', b: '2' }]);
  });

  it('returns text for text/html and similar types', async () => {
    target.route('GET', '/html', { headers: { 'content-type': 'text/html' }, body: '<p>hi</p>' });
    expect((await httpRequest(req('/html'))).data).toBe('<p>hi</p>');
  });

  it('parses a JSON object labelled text/plain, but keeps other plain text', async () => {
    target.route('GET', '/plain-json', { headers: { 'content-type': 'text/plain' }, body: '{"a":1}' });
    target.route('GET', '/plain', { headers: { 'content-type': 'text/plain' }, body: '42 apples' });
    expect((await httpRequest(req('/plain-json'))).data).toEqual({ a: 1 });
    expect((await httpRequest(req('/plain'))).data).toBe('42 apples');
  });

  it('sniffs JSON, XML and text when there is no content type', async () => {
    target.route('GET', '/sniff-json', (_r, res) => {
      res.end(' [1,2,3] ');
      return undefined;
    });
    target.route('GET', '/sniff-xml', (_r, res) => {
      res.end('<a><b>x</b></a>');
      return undefined;
    });
    target.route('GET', '/sniff-text', (_r, res) => {
      res.end('{not json');
      return undefined;
    });
    expect((await httpRequest(req('/sniff-json'))).data).toEqual([1, 2, 3]);
    expect((await httpRequest(req('/sniff-xml'))).data).toEqual({ a: { b: 'x' } });
    expect((await httpRequest(req('/sniff-text'))).data).toBe('{not json');
  });

  it('decompresses a gzip-encoded response', async () => {
    target.route('GET', '/gzip', (r) => ({
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify({ compressed: r.headers['accept-encoding'] })),
    }));
    expect((await httpRequest(req('/gzip'))).data).toEqual({ compressed: 'gzip, deflate, br' });
  });

  it('returns null for an empty body', async () => {
    target.route('GET', '/empty', { headers: { 'content-type': 'application/json' }, body: '' });
    expect((await httpRequest(req('/empty'))).data).toBeNull();
  });

  it('returns a file reference for binary content, named after the URL path', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0]);
    target.route('GET', '/img/logo.png', { headers: { 'content-type': 'image/png' }, body: png });
    const file = asFile((await httpRequest(req('/img/logo.png'))).data);
    expect(file).toMatchObject({ filename: 'logo.png', contentType: 'image/png', size: png.byteLength });
    expect([...fileRefBytes(file)]).toEqual([...png]);
  });

  it('names a file from Content-Disposition and treats attachments as files whatever their type', async () => {
    target.route('GET', '/export', {
      headers: {
        'content-type': 'application/json',
        'content-disposition': `attachment; filename="report.json"; filename*=UTF-8''r%C3%A9sum%C3%A9.json`,
      },
      body: '{"a":1}',
    });
    const file = asFile((await httpRequest(req('/export'))).data);
    expect(file).toMatchObject({ filename: 'résumé.json', contentType: 'application/json', size: 7 });
    expect(fileRefBytes(file).toString()).toBe('{"a":1}');
  });

  it('refuses path components in a server-given filename', async () => {
    target.route('GET', '/evil', {
      headers: {
        'content-type': 'application/pdf',
        'content-disposition': 'inline; filename="../../etc/passwd"',
      },
      body: new Uint8Array([37, 80, 68, 70]),
    });
    expect(asFile((await httpRequest(req('/evil'))).data).filename).toBe('passwd');
  });

  it('falls back to the name "download" and sniffs undeclared binary bytes as a file', async () => {
    target.route('GET', '/', (_r, res) => {
      res.end(Buffer.from([0, 159, 146, 150]));
      return undefined;
    });
    const file = asFile((await httpRequest(req('/'))).data);
    expect(file).toMatchObject({ filename: 'download', contentType: 'application/octet-stream', size: 4 });
  });

  it('fails clearly when the body exceeds the size limit, declared or streamed', async () => {
    target.route('GET', '/big', { headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(5000) });
    target.route('GET', '/big-chunked', (_r, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('x'.repeat(3000));
      res.end('y'.repeat(3000));
      return undefined;
    });
    for (const path of ['/big', '/big-chunked']) {
      const error = await rejection(httpRequest(req(path), { maxResponseBytes: 4000 }));
      expect(error).toBeInstanceOf(HttpRequestError);
      expect(error.message).toContain('exceeds the limit of 4000 bytes');
    }
  });
});

describe('status handling', () => {
  it('treats any 2xx as success', async () => {
    target.route('POST', '/accepted', { status: 202, body: { queued: true } });
    const response = await httpRequest(req('/accepted', { method: 'POST', body: {} }));
    expect(response).toMatchObject({ status: 202, data: { queued: true } });
  });

  it('fails other statuses with status, method, masked URL and the start of the body', async () => {
    target.route('GET', '/missing', {
      status: 404,
      headers: { 'x-request-id': 'r1' },
      body: `nope ${'z'.repeat(2000)}`,
    });
    const url = `${target.url.replace('http://', 'http://bob:hunter2@')}/missing?api_key=SECRET1&page=2&access_token=SECRET2`;
    const error = await rejection(httpRequest(req('', { url })));
    expect(error).toBeInstanceOf(HttpStatusError);
    const statusError = error as HttpStatusError;
    expect(statusError.status).toBe(404);
    expect(statusError.headers['x-request-id']).toBe('r1');
    const host = target.url.replace('http://', '');
    expect(error.message).toBe(
      `HTTP 404 GET http://bob:***@${host}/missing?api_key=***&page=2&access_token=***: nope ${'z'.repeat(995)}`,
    );
    expect(error.message).not.toContain('hunter2');
    expect(error.message).not.toContain('SECRET');
  });
});

describe('maskUrl', () => {
  it('masks a lone username, which is usually a token', () => {
    expect(maskUrl('https://ghp_abc@example.com/x')).toBe('https://***@example.com/x');
  });

  it('masks credential-like query names and leaves others untouched', () => {
    expect(maskUrl('https://h/p?X-Amz-Signature=s&clientSecret=c&sig=1&author=me&q=a%20b')).toBe(
      'https://h/p?X-Amz-Signature=***&clientSecret=***&sig=***&author=me&q=a+b',
    );
    expect(maskUrl('https://h/p?q=a%20b')).toBe('https://h/p?q=a%20b');
  });
});

describe('retries', () => {
  function failTimes(
    path: string,
    times: number,
    failure: { status: number; headers?: Record<string, string> },
  ) {
    target.route('*', path, () =>
      target.count(path) <= times ? { ...failure, body: 'try later' } : { body: { ok: true } },
    );
  }

  it('retries a 503 after the delay its Retry-After asks for', async () => {
    failTimes('/flaky', 1, { status: 503, headers: { 'retry-after': '2' } });
    const { delays, options } = recordingSleep();
    const response = await httpRequest(req('/flaky', { retry: { enabled: true } }), options);
    expect(response.data).toEqual({ ok: true });
    expect(target.count('/flaky')).toBe(2);
    expect(delays).toEqual([2000]);
  });

  it('really waits for Retry-After between attempts', async () => {
    failTimes('/flaky-real', 1, { status: 503, headers: { 'retry-after': '1' } });
    await httpRequest(req('/flaky-real', { retry: { enabled: true } }));
    const [first, second] = target.requests;
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(950);
  });

  it('retries 429 and 408', async () => {
    failTimes('/limited', 1, { status: 429 });
    failTimes('/request-timeout', 1, { status: 408 });
    await httpRequest(req('/limited', { retry: { enabled: true } }), recordingSleep().options);
    await httpRequest(req('/request-timeout', { retry: { enabled: true } }), recordingSleep().options);
    expect(target.count('/limited')).toBe(2);
    expect(target.count('/request-timeout')).toBe(2);
  });

  it('never retries 400 or 404', async () => {
    failTimes('/bad', 5, { status: 400 });
    failTimes('/gone', 5, { status: 404 });
    for (const path of ['/bad', '/gone']) {
      const error = await rejection(
        httpRequest(req(path, { retry: { enabled: true } }), recordingSleep().options),
      );
      expect(error).toBeInstanceOf(HttpStatusError);
      expect(target.count(path)).toBe(1);
    }
  });

  it('does not retry when retries are disabled', async () => {
    failTimes('/no-retry', 5, { status: 503 });
    const error = await rejection(
      httpRequest(req('/no-retry', { method: 'POST' }), recordingSleep().options),
    );
    expect((error as HttpStatusError).status).toBe(503);
    expect(target.count('/no-retry')).toBe(1);
  });

  it('gives up after maxAttempts and reports the last failure', async () => {
    failTimes('/down', 10, { status: 502 });
    const { delays, options } = recordingSleep();
    const error = await rejection(
      httpRequest(req('/down', { retry: { enabled: true, maxAttempts: 4 } }), options),
    );
    expect(error.message).toMatch(/^HTTP 502 GET /);
    expect(target.count('/down')).toBe(4);
    expect(delays).toHaveLength(3);
  });

  it('stops retrying when the Retry-After wait would pass the deadline', async () => {
    failTimes('/later', 5, { status: 503, headers: { 'retry-after': '30' } });
    const { delays, options } = recordingSleep();
    const error = await rejection(
      httpRequest(req('/later', { retry: { enabled: true }, deadline: Date.now() + 10_000 }), options),
    );
    expect((error as HttpStatusError).status).toBe(503);
    expect(target.count('/later')).toBe(1);
    expect(delays).toEqual([]);
  });

  it('retries connection failures', async () => {
    const closed = await startHttpTarget();
    const url = `${closed.url}/x`;
    await closed.stop();
    const { delays, options } = recordingSleep();
    const error = await rejection(httpRequest(req('', { url, retry: { enabled: true } }), options));
    expect(error).toBeInstanceOf(HttpRequestError);
    expect((error as HttpRequestError).kind).toBe('network');
    expect(error.message).toContain('ECONNREFUSED');
    expect(delays).toHaveLength(2);
  });
});

describe('deadline and abort', () => {
  it('fails a response slower than the time left with a timeout error', async () => {
    target.route('GET', '/slow', { delayMs: 10_000, body: 'late' });
    const error = await rejection(httpRequest(req('/slow', { deadline: Date.now() + 300 })));
    expect(error).toBeInstanceOf(HttpRequestError);
    expect((error as HttpRequestError).kind).toBe('timeout');
    expect(error.message).toMatch(/^HTTP GET http:\/\/127\.0\.0\.1:\d+\/slow timed out/);
  });

  it('bounds a body that trickles in past the deadline', async () => {
    target.route('GET', '/trickle', (_r, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('start');
      return undefined;
    });
    const error = await rejection(httpRequest(req('/trickle', { deadline: Date.now() + 300 })));
    expect((error as HttpRequestError).kind).toBe('timeout');
  });

  it('fails at once when the deadline has already passed', async () => {
    const error = await rejection(httpRequest(req('/anything', { deadline: Date.now() - 1 })));
    expect((error as HttpRequestError).kind).toBe('timeout');
    expect(target.count('/anything')).toBe(0);
  });

  it('aborts a request in flight when the signal fires', async () => {
    const controller = new AbortController();
    target.route('GET', '/hang', () => {
      controller.abort();
      return { delayMs: 10_000, body: 'late' };
    });
    const error = await rejection(httpRequest(req('/hang', { signal: controller.signal })));
    expect(error).toBeInstanceOf(HttpRequestError);
    expect((error as HttpRequestError).kind).toBe('aborted');
    expect(error.message).toMatch(/\/hang was aborted$/);
  });

  it('aborts a retry wait when the signal fires', async () => {
    failTimes503('/abort-wait');
    const controller = new AbortController();
    const pending = httpRequest(
      req('/abort-wait', {
        signal: controller.signal,
        retry: { enabled: true },
        deadline: Date.now() + 120_000,
      }),
      { retryPolicy: { baseDelayMs: 60_000, maxDelayMs: 60_000 }, random: () => 0.99 },
    );
    setTimeout(() => controller.abort(), 200);
    const error = await rejection(pending);
    expect((error as HttpRequestError).kind).toBe('aborted');
    expect(target.count('/abort-wait')).toBe(1);
  });

  function failTimes503(path: string): void {
    target.route('GET', path, { status: 503 });
  }
});

describe('traceparent', () => {
  it('formats a W3C traceparent, using a 32-hex trace id as is', () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    expect(traceparentFor(traceId, '00f067aa0ba902b7')).toBe(`00-${traceId}-00f067aa0ba902b7-01`);
    expect(traceparentFor(traceId)).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  });

  it('derives a stable trace id from any other string', () => {
    const a = traceparentFor('run-trace-123', '1111111111111111');
    expect(isTraceparent(a)).toBe(true);
    expect(traceparentFor('run-trace-123', '1111111111111111')).toBe(a);
    expect(traceparentFor('run-trace-124', '1111111111111111')).not.toBe(a);
    expect(traceparentFor('00000000000000000000000000000000')).not.toMatch(/^00-0{32}-/);
    expect(traceparentFor('4BF92F3577B34DA6A3CE929D0E0E4736')).not.toContain('4BF92F');
  });

  it('sends the given traceparent, replacing one set in the headers', async () => {
    target.route('GET', '/traced', { status: 204 });
    const traceparent = traceparentFor('abc');
    await httpRequest(req('/traced', { traceparent, headers: { TraceParent: 'bogus' } }));
    expect(target.requests[0]?.headers.traceparent).toBe(traceparent);
  });

  it('sends a valid traceparent on every request, even when none is given', async () => {
    target.route('GET', '/untraced', { status: 204 });
    await httpRequest(req('/untraced'));
    expect(isTraceparent(String(target.requests[0]?.headers.traceparent))).toBe(true);
  });
});

describe('connections', () => {
  it('reuses one keep-alive socket for sequential requests to an origin', async () => {
    target.route('GET', '/ka', { body: { ok: true } });
    for (let i = 0; i < 4; i++) {
      await httpRequest(req('/ka'));
      // undici marks the connection idle a moment after the body ends; a step does other work in between.
      await new Promise((resolve) => setImmediate(resolve));
    }
    const sockets = new Set(target.requests.map((r) => r.socketId));
    expect(target.requests).toHaveLength(4);
    expect(sockets.size).toBe(1);
  });
});
