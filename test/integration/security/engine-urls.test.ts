/**
 * Issue 7, item 7: values substituted into a step URL are encoded for where they stand, so a value
 * cannot reach another path, add query parameters, or pick the host. Real engine and HTTP target.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useHttpTarget } from '../../support/http-target.ts';
import { useTestEngine } from '../../support/security-engine.ts';

const target = useHttpTarget({ resetBeforeEach: true });
const engine = useTestEngine();

beforeAll(async () => {
  target.route('GET', '/admin', { body: { admin: true } });
});

describe('URL templates', () => {
  it('encodes a path value as one segment: ../admin?x=# stays inside /users/…', async () => {
    target.route('GET', '/users/..%2Fadmin%3Fx%3D%23', { body: { user: 'odd id' } });
    const result = await engine.run(
      { steps: [{ id: 'u', config: { url: `${target.url}/users/<<id>>` } }] },
      { inputs: { id: '../admin?x=#' } },
    );
    expect(result.status).toBe('success');
    expect(target.count('/admin')).toBe(0);
    expect(target.requests.map((r) => [r.path, r.query])).toEqual([['/users/..%2Fadmin%3Fx%3D%23', []]]);
  });

  it('fails the step when a path value would be a dot segment', async () => {
    const result = await engine.run(
      { steps: [{ id: 'u', config: { url: `${target.url}/users/<<id>>/profile` } }] },
      { inputs: { id: '..' } },
    );
    expect(result.stepResults[0]?.error).toBe(
      'Template expression <<id>> makes the URL path segment \'..\', which would move up the path; a value in the path is one segment and cannot be "." or ".."',
    );
    expect(target.requests).toHaveLength(0);
  });

  it('encodes a query value as a value: & and = cannot add parameters; numbers stay numbers', async () => {
    target.route('GET', '/search', { body: [] });
    await engine.run(
      { steps: [{ id: 's', config: { url: `${target.url}/search?q=<<term>>&page=<<n>>` } }] },
      { inputs: { term: 'a&admin=1#x', n: 2 } },
    );
    expect(target.requests[0]?.query).toEqual([
      ['q', 'a&admin=1#x'],
      ['page', '2'],
    ]);
  });

  it('refuses an expression inside the host; a leading expression may supply the origin', async () => {
    const inHost = await engine.run(
      { steps: [{ id: 'h', config: { url: 'http://<<tenant>>.example.test/x' } }] },
      { inputs: { tenant: '127.0.0.1:1/' } },
    );
    expect(inHost.stepResults[0]?.error).toMatch(
      /^Template expression <<tenant>> at position 7 is inside the scheme or host of the URL; only an expression at the very start/,
    );

    target.route('GET', '/base/items', { body: ['ok'] });
    const leading = await engine.run(
      { steps: [{ id: 'l', config: { url: '<<base>>/items' } }] },
      { inputs: { base: `${target.url}/base` } },
    );
    expect(leading.data).toEqual(['ok']);
  });

  it('encodes userinfo values as userinfo', async () => {
    target.route('GET', '/who', (req) => ({ body: { auth: req.headers.authorization ?? null } }));
    const port = new URL(target.url).port;
    const result = await engine.run(
      { steps: [{ id: 'w', config: { url: `http://<<user>>:<<pass>>@127.0.0.1:${port}/who` } }] },
      { inputs: { user: 'ada', pass: 'p@ss/w:rd' } },
    );
    expect(result.data).toEqual({ auth: `Basic ${Buffer.from('ada:p@ss/w:rd').toString('base64')}` });
  });
});
