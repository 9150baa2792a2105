import { describe, expect, it } from 'vitest';
import type { RequestStepConfig } from '../../../contract/api/tool.ts';
import { isRedisStep, redisBodyTemplateProblems } from '../../../engine/redis-templates.ts';
import { checkTool, problemLine } from '../../../tools/validation.ts';

const step = (url: string): RequestStepConfig => ({ type: 'request', url, method: 'GET' });

describe('Redis steps and templates', () => {
  it('are told by their own scheme, else by their system', () => {
    expect(isRedisStep(step('redis://cache:6379/0'), [])).toBe(true);
    expect(isRedisStep(step('REDISS://cache'), [])).toBe(true);
    expect(isRedisStep(step('https://cache'), ['redis://x'])).toBe(false);
    expect(isRedisStep(step('/'), ['rediss://cache.internal:6380/2'])).toBe(true);
    expect(isRedisStep(step('/'), ['https://api.example'])).toBe(false);
    // Only known when rendered: the engine refuses it at run time.
    expect(isRedisStep(step('<<cache_url>>'), [])).toBe(false);
  });

  it('refuse expressions in a body given as text, and allow them in the arrays of an object body', () => {
    const fields = (body: Parameters<typeof redisBodyTemplateProblems>[0]) =>
      redisBodyTemplateProblems(body).map((problem) => problem.field);
    // Text substitution into JSON text: a value `x", "FLUSHALL` would add an argument.
    expect(fields('{"command": "GET", "args": ["<<key>>"]}')).toEqual(['config.body']);
    expect(fields('{"command": "GET", "args": ["k"]}')).toEqual([]);
    expect(fields({ command: 'GET', args: ['user:<<id>>'] })).toEqual([]);
    expect(
      fields({
        commands: [
          ['GET', '<<a>>'],
          ['INCR', '<<(s) => s.b>>'],
        ],
      }),
    ).toEqual([]);
    expect(fields(undefined)).toEqual([]);
    const [problem] = redisBodyTemplateProblems('{"command": "GET", "args": ["<<key>>"]}');
    expect(problem?.message).toContain('(<<key>>)');
    expect(problem?.message).toContain('{"command": "GET", "args": ["<<key>>"]}');
  });

  it('are refused at save when their text body holds an expression, naming the step', async () => {
    const checked = await checkTool(
      {
        id: 'cache-lookup',
        steps: [
          {
            id: 'get',
            config: { url: 'redis://cache:6379/0', body: '{"command": "GET", "args": ["<<key>>"]}' },
          },
          { id: 'ok', config: { url: 'redis://cache:6379/0', body: { command: 'GET', args: ['<<key>>'] } } },
        ],
      },
      { systemExists: async () => true },
    );
    expect(checked.problems.map(problemLine)).toEqual([
      expect.stringMatching(
        /^steps\[0\] \(get\)\.config\.body: template expressions are not allowed in a Redis body given as text/,
      ),
    ]);
  });
});
