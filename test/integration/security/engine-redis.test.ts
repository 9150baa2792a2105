/**
 * Redis steps through the real engine (templates, credentials, redaction, the egress guard, the step data
 * bound) against a real redis-server: what reaches the server is data, credentials go only to the system's
 * own host, and no password shows in a result or an error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tool, type ToolInput } from '../../../contract/api/tool.ts';
import type { JsonObject } from '../../../contract/json.ts';
import type { ResolvedSystem } from '../../../contract/wire/run-order.ts';
import { PERMISSIVE_EGRESS } from '../../../engine/protocols/egress-policy.ts';
import { closeConnectionPools, createProtocols } from '../../../engine/protocols/index.ts';
import { runTool } from '../../../engine/run-tool.ts';
import { unsafeTestEvaluate } from '../../support/js-evaluator.ts';
import { REDIS_PASSWORD, redisServerMissing, useRedisServer } from '../../support/redis-server.ts';
import { DENY_PRIVATE, useTestEngine } from '../../support/security-engine.ts';

const missing = redisServerMissing();

describe.skipIf(missing)('Redis steps in the engine', () => {
  const engine = useTestEngine();
  const redis = useRedisServer();
  let cache: ResolvedSystem;
  const steps = (...list: ToolInput['steps']) => ({ steps: list });
  const redisStep = (id: string, body: unknown, modify = false): ToolInput['steps'][number] => ({
    id,
    modify,
    config: { url: '/', systemId: 'cache', body: body as never },
  });

  beforeAll(async () => {
    await redis.admin().flushall();
    cache = {
      id: 'cache',
      url: `${redis.url}/0`,
      authType: 'dataStore',
      credentials: { password: REDIS_PASSWORD },
    } as ResolvedSystem;
  });

  it('fills each argument from a template and keeps an injection attempt one argument', async () => {
    const admin = redis.admin();
    await admin.set('keep-me', 'yes');
    const inputs: JsonObject = { key: 'note', value: 'x\r\nFLUSHALL\r\n' };
    const result = await engine.run(
      steps(
        redisStep('write', { command: 'SET', args: ['<<key>>', '<<value>>'] }, true),
        redisStep('read', { command: 'GET', args: ['<<key>>'] }),
      ),
      { inputs, systems: [cache] },
    );
    expect(result.status, result.error).toBe('success');
    expect(result.data).toBe('x\r\nFLUSHALL\r\n');
    expect(await admin.get('keep-me')).toBe('yes');
  });

  it('refuses templates in a body given as text at run time', async () => {
    const result = await engine.run(steps(redisStep('get', '{"command": "GET", "args": ["<<key>>"]}')), {
      inputs: { key: 'k' },
      systems: [cache],
    });
    expect(result.status).toBe('failed');
    expect(result.error).toContain(
      'Step get failed: config.body: template expressions are not allowed in a Redis body given as text (<<key>>)',
    );
  });

  it('takes the system’s connection URL from its url credential, used as <<cache_url>>', async () => {
    await redis.admin(2).set('in-two', 'from the credential URL');
    const system = {
      id: 'cache',
      authType: 'dataStore',
      credentials: { url: `redis://:${encodeURIComponent(REDIS_PASSWORD)}@127.0.0.1:${redis.port}/2` },
    } as ResolvedSystem;
    const result = await engine.run(
      steps({
        id: 'get',
        config: { url: '<<cache_url>>', systemId: 'cache', body: { command: 'GET', args: ['in-two'] } },
      }),
      { systems: [system] },
    );
    expect(result.status, result.error).toBe('success');
    expect(result.data).toBe('from the credential URL');
  });

  it('sends the credentials only to the system’s own host: another host gets none, and the step says so', async () => {
    const result = await engine.run(
      steps({
        id: 'elsewhere',
        config: { url: `redis://localhost:${redis.port}/0`, systemId: 'cache', body: { command: 'PING' } },
      }),
      { systems: [cache] },
    );
    expect(result.status).toBe('failed');
    expect(result.error).toContain(
      `Redis at redis://localhost:${redis.port}/0: authentication failed: NOAUTH`,
    );
    expect(JSON.stringify(result.stepResults)).toContain("the credentials of system 'cache' were not sent");
  });

  it('never shows the password: a wrong one fails without it, and a value equal to it is redacted', async () => {
    const wrong = { ...cache, credentials: { password: 'wrong-SECRET-password' } } as ResolvedSystem;
    const failed = await engine.run(steps(redisStep('ping', { command: 'PING' })), { systems: [wrong] });
    expect(failed.status).toBe('failed');
    expect(failed.error).toContain('authentication failed: WRONGPASS');
    expect(JSON.stringify(failed)).not.toContain('SECRET');

    await redis.admin().set('echo', REDIS_PASSWORD);
    const echoed = await engine.run(steps(redisStep('get', { command: 'GET', args: ['echo'] })), {
      systems: [cache],
    });
    expect(echoed.status).toBe('success');
    expect(echoed.data).toBe('<<cache_password>>');
    expect(JSON.stringify(echoed)).not.toContain(REDIS_PASSWORD);
  });

  it('refuses the metadata address at connect time, whatever the policy', async () => {
    const result = await engine.run(
      steps({ id: 'meta', config: { url: 'redis://169.254.169.254:6379/0', body: { command: 'PING' } } }),
    );
    expect(result.status).toBe('failed');
    expect(result.error).toBe(
      'Step meta failed: Redis at redis://169.254.169.254:6379/0: cannot connect: refused to connect to 169.254.169.254: the cloud metadata address',
    );
  });

  it('refuses a private address under a deny-private policy unless the system allows its network', async () => {
    const refused = await engine.run(steps(redisStep('size', { command: 'DBSIZE' })), {
      systems: [cache],
      egress: DENY_PRIVATE,
    });
    expect(refused.status).toBe('failed');
    expect(refused.error).toContain('cannot connect: refused to connect to 127.0.0.1');
    const allowed = await engine.run(steps(redisStep('size', { command: 'DBSIZE' })), {
      systems: [{ ...cache, allowedNetworks: ['127.0.0.1'] } as ResolvedSystem],
      egress: DENY_PRIVATE,
    });
    expect(allowed.status, allowed.error).toBe('success');
    expect(typeof allowed.data).toBe('number');
  });
});

describe.skipIf(missing)('the step data bound on a Redis step', () => {
  const redis = useRedisServer();
  afterAll(async () => {
    await closeConnectionPools();
  });

  it('fails a step whose reply is larger than KUBEGLUE_MAX_STEP_DATA_BYTES, having read only about that much', async () => {
    await redis.admin().set('large', Buffer.alloc(8 * 1024 * 1024, 'z'));
    const result = await runTool(
      {
        evaluate: unsafeTestEvaluate,
        protocols: createProtocols({ egress: PERMISSIVE_EGRESS }),
        limits: { maxStepDataBytes: 256 * 1024 },
      },
      {
        tool: Tool.parse({
          id: 'large',
          steps: [
            {
              id: 'get',
              config: {
                url: `redis://:${REDIS_PASSWORD}@127.0.0.1:${redis.port}/0`,
                body: { command: 'GET', args: ['large'] },
              },
            },
          ],
        }),
        inputs: {},
        systems: [],
        runtimeCredentials: undefined,
        traceId: 'redis-bound',
        signal: new AbortController().signal,
        timeoutMs: 15_000,
      },
    );
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(
      /^Step get failed: Redis at redis:\/\/127\.0\.0\.1:\d+\/0: the reply is larger than the step data limit of 262144 bytes \(KUBEGLUE_MAX_STEP_DATA_BYTES\): the connection was closed after \d+ bytes$/,
    );
  });
});
