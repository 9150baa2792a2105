import { describe, expect, it } from 'vitest';
import { signNotification, verifySignature } from '../../../operator/outbox/notify.ts';

// The test vector published with the Standard Webhooks specification (secret whsec_MfKQ9r8G…).
const SPEC_KEY = Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'base64');
const SPEC_ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const SPEC_TIMESTAMP = 1614265330;
const SPEC_BODY = '{"test": 2432232314}';
const SPEC_SIGNATURE = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';

function headersFor(key: Buffer, id: string, timestamp: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signNotification(key, id, timestamp, body),
  };
}

describe('notification signatures', () => {
  const key = Buffer.from('0123456789abcdef0123456789abcdef');
  const now = 1_700_000_000_000;
  const timestamp = now / 1000;
  const body = JSON.stringify({ runId: 'run-1', status: 'success', data: { n: 1 } });

  it('signs as the Standard Webhooks reference does', () => {
    expect(signNotification(SPEC_KEY, SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY)).toBe(SPEC_SIGNATURE);
    const headers = {
      'webhook-id': SPEC_ID,
      'webhook-timestamp': `${SPEC_TIMESTAMP}`,
      'webhook-signature': SPEC_SIGNATURE,
    };
    expect(verifySignature(SPEC_KEY, headers, SPEC_BODY, { now: SPEC_TIMESTAMP * 1000 })).toBe(true);
  });

  it('verifies what it signed, from a string or the raw bytes', () => {
    const headers = headersFor(key, 'msg_run-1', timestamp, body);
    expect(verifySignature(key, headers, body, { now })).toBe(true);
    expect(verifySignature(key, headers, Buffer.from(body), { now })).toBe(true);
  });

  it('reads fetch Headers and header names in any case', () => {
    const signed = headersFor(key, 'msg_run-1', timestamp, body);
    expect(verifySignature(key, new Headers(signed), body, { now })).toBe(true);
    const upper = Object.fromEntries(
      Object.entries(signed).map(([name, value]) => [name.toUpperCase(), value]),
    );
    expect(verifySignature(key, upper, body, { now })).toBe(true);
  });

  it('rejects a changed body, id or timestamp, and another key', () => {
    const headers = headersFor(key, 'msg_run-1', timestamp, body);
    expect(verifySignature(key, headers, body.replace('"n":1', '"n":2'), { now })).toBe(false);
    expect(verifySignature(key, { ...headers, 'webhook-id': 'msg_run-2' }, body, { now })).toBe(false);
    expect(
      verifySignature(key, { ...headers, 'webhook-timestamp': String(timestamp + 1) }, body, { now }),
    ).toBe(false);
    expect(verifySignature(Buffer.from('another key of the same length!!'), headers, body, { now })).toBe(
      false,
    );
  });

  it('rejects timestamps outside the tolerance', () => {
    const headers = headersFor(key, 'msg_run-1', timestamp, body);
    expect(verifySignature(key, headers, body, { now: now + 5 * 60_000 })).toBe(true);
    expect(verifySignature(key, headers, body, { now: now + 5 * 60_000 + 1000 })).toBe(false);
    expect(verifySignature(key, headers, body, { now: now - 6 * 60_000 })).toBe(false);
    expect(verifySignature(key, headers, body, { now: now + 3_600_000, toleranceSeconds: 3600 })).toBe(true);
  });

  it('accepts any one of several signatures (key rotation)', () => {
    const headers = headersFor(key, 'msg_run-1', timestamp, body);
    const old = signNotification(Buffer.from('old key'), 'msg_run-1', timestamp, body);
    const rotated = { ...headers, 'webhook-signature': `${old} ${headers['webhook-signature']}` };
    expect(verifySignature(key, rotated, body, { now })).toBe(true);
    expect(verifySignature(key, { ...headers, 'webhook-signature': old }, body, { now })).toBe(false);
  });

  it('rejects missing or malformed headers', () => {
    const headers = headersFor(key, 'msg_run-1', timestamp, body);
    expect(verifySignature(key, {}, body, { now })).toBe(false);
    expect(verifySignature(key, { ...headers, 'webhook-signature': undefined }, body, { now })).toBe(false);
    expect(verifySignature(key, { ...headers, 'webhook-timestamp': '1e9' }, body, { now })).toBe(false);
    expect(verifySignature(key, { ...headers, 'webhook-signature': 'v1,' }, body, { now })).toBe(false);
  });
});
