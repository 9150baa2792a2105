/**
 * Redis steps against a real redis-server (test/support/redis-server.ts): bodies and replies, the URL's
 * database, credentials and TLS, modify: false by the server's command table, the step data bound, the run
 * deadline and cancellation (the connection is closed, which ends a blocked command on the server), and
 * pooled connections per server, database and credentials.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POOL_BOUNDS } from '../../../engine/protocols/pool-registry.ts';
import {
  closeRedisPools,
  executeRedisStep,
  openRedisConnectionCount,
  RedisStepError,
  type RedisStepRequest,
} from '../../../engine/protocols/redis.ts';
import { stepCaller, stepRejection } from '../../support/connection-step.ts';
import {
  REDIS_PASSWORD,
  REDIS_USERS,
  redisServerMissing,
  useRedisServer,
} from '../../support/redis-server.ts';

const missing = redisServerMissing();

describe.skipIf(missing)('Redis steps', () => {
  const redis = useRedisServer();
  const admin = () => redis.admin();

  afterAll(async () => {
    await closeRedisPools();
  });

  const step = stepCaller(executeRedisStep, () => ({
    url: redis.url,
    credentials: { password: REDIS_PASSWORD },
    modify: true,
  }));
  const rejection = (promise: Promise<unknown>) => stepRejection(promise, RedisStepError);

  let db: ReturnType<typeof admin>;
  beforeAll(async () => {
    db = admin();
    await db.flushall();
  });

  describe('bodies and replies', () => {
    it('answers one command with its reply: strings, nil, integers, maps as objects, sets as arrays', async () => {
      await db.hset('user:1', { name: 'Ada', lang: 'en' });
      await db.sadd('tags', 'a');
      expect(await step({ command: 'SET', args: ['greeting', 'héllo wörld'] })).toBe('OK');
      expect(await step({ command: 'GET', args: ['greeting'] })).toBe('héllo wörld');
      expect(await step({ command: 'get', args: ['no-such-key'] })).toBeNull();
      expect(await step({ command: 'INCR', args: ['counter'] })).toBe(1);
      expect(await step({ command: 'HGETALL', args: ['user:1'] })).toEqual({ name: 'Ada', lang: 'en' });
      expect(await step({ command: 'SMEMBERS', args: ['tags'] })).toEqual(['a']);
      expect(await step({ command: 'EXISTS', args: ['user:1', 'nope'] })).toBe(1);
    });

    it('keeps integers beyond 2^53 exact as text and doubles as numbers', async () => {
      expect(await step({ command: 'INCRBY', args: ['big', '9007199254740993'] })).toBe('9007199254740993');
      await step({ command: 'ZADD', args: ['scores', 1.5, 'ada'] });
      expect(await step({ command: 'ZSCORE', args: ['scores', 'ada'] })).toBe(1.5);
      // INCRBYFLOAT answers a bulk string, which stays text.
      expect(await step({ command: 'INCRBYFLOAT', args: ['float', '0.25'] })).toBe('0.25');
    });

    it('returns binary values that are not UTF-8 as {"$base64": …} and takes binary arguments the same way', async () => {
      const bytes = Buffer.from([0xff, 0x00, 0xfe, 0x41]);
      expect(await step({ command: 'SET', args: ['blob', { $base64: bytes.toString('base64') }] })).toBe(
        'OK',
      );
      expect(Buffer.compare((await db.getBuffer('blob')) ?? Buffer.alloc(0), bytes)).toBe(0);
      expect(await step({ command: 'GET', args: ['blob'] })).toEqual({ $base64: bytes.toString('base64') });
    });

    it('runs a pipeline and answers one reply per command, in order', async () => {
      await db.set('a', 'x');
      const replies = await step({
        commands: [
          ['GET', 'a'],
          ['INCR', 'pipe'],
          ['INCR', 'pipe'],
        ],
      });
      expect(replies).toEqual(['x', 1, 2]);
    });

    it('runs a transaction with MULTI/EXEC and answers EXEC’s replies', async () => {
      const replies = await step({
        commands: [
          ['SET', 'tx', '1'],
          ['INCR', 'tx'],
          ['GET', 'tx'],
        ],
        transaction: true,
      });
      expect(replies).toEqual(['OK', 2, '2']);
    });

    it('fails a pipeline command with its number and says the others ran', async () => {
      await db.set('text', 'not a number');
      const error = await rejection(
        step({
          commands: [
            ['INCR', 'ran'],
            ['INCR', 'text'],
            ['INCR', 'ran'],
          ],
        }),
      );
      expect(error.kind).toBe('command');
      expect(error.code).toBe('ERR');
      expect(error.message).toBe(
        `Redis at ${redis.url}/0: command 2 of 3: INCR failed: ERR value is not an integer or out of range; ` +
          'the other commands of the pipeline ran (a pipeline is not a transaction: "transaction": true runs all or none)',
      );
      expect(await db.get('ran')).toBe('2');
    });

    it('discards a transaction whose command the server refuses when queued: none runs', async () => {
      const error = await rejection(
        step({ commands: [['INCR', 'never'], ['NOSUCHCOMMAND']], transaction: true }),
      );
      expect(error.kind).toBe('unknown-command');
      expect(error.message).toContain("command 2 of 2: ERR unknown command 'NOSUCHCOMMAND'");
      expect(error.message).toContain('the transaction was discarded: no command ran');
      expect(await db.exists('never')).toBe(0);
    });

    it('keeps an argument holding CRLF and a second command one argument: nothing is injected', async () => {
      await db.set('sentinel', 'still here');
      const evil = 'x\r\nFLUSHALL\r\n';
      expect(await step({ command: 'SET', args: ['injected', evil] })).toBe('OK');
      expect(await step({ command: 'SET', args: ['crlf', '\r\n'] })).toBe('OK');
      expect(await db.get('injected')).toBe(evil);
      expect(await db.get('crlf')).toBe('\r\n');
      expect(await db.get('sentinel')).toBe('still here');
      // A "command" with its arguments in the name is refused, not split.
      const split = await rejection(step({ command: 'GET sentinel\r\nFLUSHALL' }));
      expect(split.kind).toBe('invalid-request');
      expect(await db.get('sentinel')).toBe('still here');
    });

    it('refuses a command line, commands that change the pooled connection, and objects as arguments', async () => {
      const line = await rejection(step('GET sentinel'));
      expect(line.message).toContain('a command line is not parsed');
      expect((await rejection(step({ command: 'SELECT', args: [2] }))).message).toBe(
        'command: SELECT is not allowed in a step: the database is the URL path (redis://host:6379/2)',
      );
      expect((await rejection(step({ commands: [['MULTI'], ['GET', 'a']] }))).message).toContain(
        'commands[0]: MULTI is not allowed in a step: write "transaction": true',
      );
      expect((await rejection(step({ command: 'CLIENT', args: ['REPLY', 'OFF'] }))).message).toContain(
        'CLIENT REPLY is not allowed',
      );
      const object = await rejection(step({ command: 'SET', args: ['k', { a: 1 }] }));
      expect(object.message).toContain('command argument 2: expected a string, a number or {"$base64": "…"}');
    });
  });

  describe('URL and credentials', () => {
    it('uses the database of the URL path, 0 by default', async () => {
      await step({ command: 'SET', args: ['where', 'db3'] }, { url: `${redis.url}/3` });
      expect(await redis.admin(3).get('where')).toBe('db3');
      expect(await db.exists('where')).toBe(0);
    });

    it('refuses a database outside 0–15 and unknown URL parameters', async () => {
      for (const path of ['/16', '/abc', '/-1']) {
        const error = await rejection(step({ command: 'PING' }, { url: `${redis.url}${path}` }));
        expect(error.kind).toBe('invalid-request');
        expect(error.message).toContain('the database is a number from 0 to 15 after the port');
      }
      const param = await rejection(step({ command: 'PING' }, { url: `${redis.url}/0?protocol=2` }));
      expect(param.message).toContain("unknown parameter 'protocol'");
    });

    it('takes the password from the URL, or the user and password from the credentials', async () => {
      const fromUrl = await step(
        { command: 'ACL', args: ['WHOAMI'] },
        { url: `redis://:${encodeURIComponent(REDIS_PASSWORD)}@127.0.0.1:${redis.port}/0`, credentials: {} },
      );
      expect(fromUrl).toBe('default');
      const alice = await step(
        { command: 'ACL', args: ['WHOAMI'] },
        { credentials: { username: 'alice', password: REDIS_USERS.alice.password } },
      );
      expect(alice).toBe('alice');
    });

    it('fails a wrong password as an authentication failure that names the server, never the password', async () => {
      const error = await rejection(
        step({ command: 'PING' }, { credentials: { username: 'alice', password: 'wrong-SECRET-password' } }),
      );
      expect(error.kind).toBe('auth');
      expect(error.code).toBe('WRONGPASS');
      expect(error.message).toMatch(
        new RegExp(
          `^Redis at ${redis.url}/0: authentication failed: WRONGPASS invalid username-password pair`,
        ),
      );
      expect(error.message).not.toContain('SECRET');
      const url = await rejection(
        step(
          { command: 'PING' },
          { url: `redis://bob:wrong-SECRET-password@127.0.0.1:${redis.port}`, credentials: {} },
        ),
      );
      expect(url.kind).toBe('auth');
      expect(url.message).not.toContain('SECRET');
    });

    it('fails without a password as NOAUTH, saying where the password goes', async () => {
      const error = await rejection(step({ command: 'PING' }, { credentials: {} }));
      expect(error.kind).toBe('auth');
      expect(error.message).toContain('authentication failed: NOAUTH');
      expect(error.message).toContain("give the password in the system's credentials or the URL");
    });

    it('fails a refused connection as a connection error naming the server', async () => {
      const error = await rejection(step({ command: 'PING' }, { url: 'redis://:SECRET-pw@127.0.0.1:1/2' }));
      expect(error.kind).toBe('connection');
      expect(error.code).toBe('ECONNREFUSED');
      expect(error.message).toBe(
        'Redis at redis://127.0.0.1:1/2: cannot connect: connect ECONNREFUSED 127.0.0.1:1',
      );
    });

    it('speaks TLS on rediss:// with the CA from the credentials, and refuses an unknown certificate', async () => {
      const credentials = { password: REDIS_PASSWORD, ca: redis.ca };
      expect(await step({ command: 'PING' }, { url: redis.tlsUrl, credentials })).toBe('PONG');
      const untrusted = await rejection(
        step({ command: 'PING' }, { url: redis.tlsUrl, credentials: { password: REDIS_PASSWORD } }),
      );
      expect(untrusted.kind).toBe('connection');
      expect(untrusted.message).toContain(`Redis at ${redis.tlsUrl}/0: cannot connect:`);
      expect(untrusted.message).toMatch(/certificate/);
      const insecure = await step(
        { command: 'PING' },
        { url: `${redis.tlsUrl}/0?tlsInsecure=true`, credentials: { password: REDIS_PASSWORD } },
      );
      expect(insecure).toBe('PONG');
    });
  });

  describe('modify: false runs only what the server flags read-only', () => {
    const read = (body: unknown, overrides: Partial<RedisStepRequest> = {}) =>
      step(body, { modify: false, ...overrides });

    it('runs read commands and refuses a write before sending it, naming it and the fix', async () => {
      await db.set('ro', 'value');
      expect(await read({ command: 'GET', args: ['ro'] })).toBe('value');
      const error = await rejection(read({ command: 'SET', args: ['ro', 'changed'] }));
      expect(error.kind).toBe('read-only');
      expect(error.message).toMatch(
        new RegExp(`^Redis at ${redis.url}/0: SET is not a read-only command \\(the server flags it: write`),
      );
      expect(error.message).toContain('set modify: true to run SET');
      expect(await db.get('ro')).toBe('value');
    });

    it('refuses a pipeline or transaction with one write before any of it runs', async () => {
      await db.set('pipe-ro', '1');
      const error = await rejection(
        read({
          commands: [
            ['INCR', 'pipe-ro'],
            ['GET', 'pipe-ro'],
            ['DEL', 'pipe-ro'],
          ],
        }),
      );
      expect(error.message).toContain('command 1: INCR is not a read-only command');
      expect(await db.get('pipe-ro')).toBe('1');
      expect(
        await read({
          commands: [
            ['GET', 'pipe-ro'],
            ['EXISTS', 'pipe-ro'],
          ],
          transaction: true,
        }),
      ).toEqual(['1', 1]);
    });

    it('judges scripts and container commands by the server’s flags: EVAL_RO and OBJECT ENCODING read, EVAL and CONFIG GET do not', async () => {
      await db.set('obj', 'x');
      expect(await read({ command: 'EVAL_RO', args: ['return redis.call("GET", KEYS[1])', 1, 'obj'] })).toBe(
        'x',
      );
      expect(await read({ command: 'OBJECT', args: ['ENCODING', 'obj'] })).toBe('embstr');
      // PING reads nothing, yet the server does not flag it readonly: DBSIZE is a read that is.
      expect(typeof (await read({ command: 'DBSIZE' }))).toBe('number');
      expect((await rejection(read({ command: 'PING' }))).message).toContain(
        'PING is not a read-only command (the server flags it: fast',
      );
      expect((await rejection(read({ command: 'EVAL', args: ['return 1', 0] }))).message).toContain(
        'EVAL is not a read-only command',
      );
      expect((await rejection(read({ command: 'CONFIG', args: ['GET', 'maxmemory'] }))).message).toContain(
        'CONFIG GET is not a read-only command (the server flags it: admin',
      );
    });

    it('refuses an unknown command as unknown, in both modes', async () => {
      const readOnly = await rejection(read({ command: 'NOSUCHCOMMAND', args: ['x'] }));
      expect(readOnly.kind).toBe('unknown-command');
      expect(readOnly.message).toBe(
        `Redis at ${redis.url}/0: unknown command 'NOSUCHCOMMAND' (the server's command table has no such command)`,
      );
      const modify = await rejection(step({ command: 'NOSUCHCOMMAND', args: ['secret-arg'] }));
      expect(modify.kind).toBe('unknown-command');
      expect(modify.message).toBe(`Redis at ${redis.url}/0: ERR unknown command 'NOSUCHCOMMAND'`);
    });

    it('asks the command table once per pool, not per step', async () => {
      const calls = async () => {
        const stats = await db.info('commandstats');
        return Number(/cmdstat_command\|info:calls=(\d+)/.exec(stats)?.[1] ?? 0);
      };
      await read({ command: 'STRLEN', args: ['ro'] });
      const before = await calls();
      for (let i = 0; i < 3; i++) await read({ command: 'STRLEN', args: ['ro'] });
      expect(await calls()).toBe(before);
    });

    it('says so when the user may not read the command table', async () => {
      const credentials = { username: 'reader', password: REDIS_USERS.reader.password };
      const error = await rejection(read({ command: 'GET', args: ['ro'] }, { credentials }));
      expect(error.kind).toBe('read-only');
      expect(error.message).toContain("cannot read the server's command table (COMMAND INFO: NOPERM");
      expect(error.message).toContain('allow the user COMMAND, or set modify: true');
      expect(await step({ command: 'GET', args: ['ro'] }, { credentials })).toBe('value');
    });
  });

  describe('bounds', () => {
    it('stops reading a reply larger than the step data bound and fails the step', async () => {
      const size = 4 * 1024 * 1024;
      await db.set('huge', Buffer.alloc(size, 'a'));
      const error = await rejection(step({ command: 'GET', args: ['huge'] }, { maxDataBytes: 64 * 1024 }));
      expect(error.kind).toBe('too-large');
      const read = Number(/after (\d+) bytes/.exec(error.message)?.[1]);
      expect(read).toBeGreaterThan(64 * 1024);
      expect(read).toBeLessThan(size / 2);
      expect(error.message).toContain(
        'larger than the step data limit of 65536 bytes (KUBEGLUE_MAX_STEP_DATA_BYTES)',
      );
      expect(await step({ command: 'STRLEN', args: ['huge'] }, { maxDataBytes: 64 * 1024 })).toBe(size);
    });

    it('ends a blocked BLPOP when the run deadline passes: the connection closes and the server lets go', async () => {
      const error = await rejection(
        step({ command: 'BLPOP', args: ['never-filled', 0] }, { deadline: Date.now() + 700 }),
      );
      expect(error.kind).toBe('timeout');
      expect(error.message).toContain('timed out: the run deadline was reached');
      await redis.waitForClients((clients) => !clients.some((client) => client.cmd === 'blpop'));
    });

    it('ends a blocked BLPOP on cancellation', async () => {
      const controller = new AbortController();
      const pending = rejection(
        step({ command: 'BLPOP', args: ['never-filled-either', 0] }, { signal: controller.signal }),
      );
      await redis.waitForClients((clients) => clients.some((client) => client.cmd === 'blpop'));
      controller.abort();
      const error = await pending;
      expect(error.kind).toBe('aborted');
      await redis.waitForClients((clients) => !clients.some((client) => client.cmd === 'blpop'));
      expect(await step({ command: 'PING' })).toBe('PONG');
    });
  });

  describe('pools', () => {
    const clientId = (overrides: Partial<RedisStepRequest> = {}) =>
      step({ command: 'CLIENT', args: ['ID'] }, overrides);

    it('reuses a pooled connection across steps', async () => {
      const first = await clientId();
      for (let i = 0; i < 3; i++) expect(await clientId()).toBe(first);
    });

    it('never shares a connection across databases or credentials', async () => {
      const zero = await clientId();
      const one = await clientId({ url: `${redis.url}/1` });
      const alice = await clientId({
        credentials: { username: 'alice', password: REDIS_USERS.alice.password },
      });
      expect(new Set([zero, one, alice]).size).toBe(3);
    });

    it('lets a process exit while its pooled connections are idle, plain and TLS', async () => {
      const module = new URL('../../../engine/protocols/redis.ts', import.meta.url).href;
      const script = `
        const { executeRedisStep } = await import(${JSON.stringify(module)});
        const base = { body: { command: 'DBSIZE' }, modify: false, signal: new AbortController().signal, deadline: Date.now() + 20000 };
        const plain = await executeRedisStep({ ...base, url: ${JSON.stringify(redis.url)}, credentials: { password: ${JSON.stringify(REDIS_PASSWORD)} } });
        const tls = await executeRedisStep({ ...base, url: ${JSON.stringify(redis.tlsUrl)}, credentials: { password: ${JSON.stringify(REDIS_PASSWORD)}, ca: ${JSON.stringify(redis.ca)} } });
        console.log(JSON.stringify([typeof plain, typeof tls]));
      `;
      // The idle timeout is 30 s: a process held by its idle connections would be killed here first.
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
        timeout: 20_000,
      });
      expect(JSON.parse(stdout)).toEqual(['number', 'number']);
    });

    it(`holds at most ${POOL_BOUNDS.connectionsPerPool} connections per server, database and credentials; the other steps wait`, async () => {
      await closeRedisPools();
      const steps = Array.from({ length: POOL_BOUNDS.connectionsPerPool + 3 }, (_, i) =>
        step({ command: 'BLPOP', args: [`wait-${i}`, 0] }),
      );
      await redis.waitForClients(
        (clients) =>
          clients.filter((client) => client.cmd === 'blpop').length === POOL_BOUNDS.connectionsPerPool,
      );
      expect(openRedisConnectionCount()).toBe(POOL_BOUNDS.connectionsPerPool);
      for (let i = 0; i < POOL_BOUNDS.connectionsPerPool + 3; i++) await db.rpush(`wait-${i}`, 'go');
      expect(await Promise.all(steps)).toEqual(
        Array.from({ length: POOL_BOUNDS.connectionsPerPool + 3 }, (_, i) => [`wait-${i}`, 'go']),
      );
      expect(openRedisConnectionCount()).toBe(POOL_BOUNDS.connectionsPerPool);
    });
  });
});
