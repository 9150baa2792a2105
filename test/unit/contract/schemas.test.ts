import { describe, expect, it } from 'vitest';
import { RunOptions, RunRequest } from '../../../contract/api/run.ts';
import { SystemCreateBody, SystemUpdateBody } from '../../../contract/api/system.ts';
import { StepConfig, Tool, ToolCreateBody, ToolUpdateBody } from '../../../contract/api/tool.ts';
import { formatIssues } from '../../../contract/format-issues.ts';

const step = { id: 'fetch', config: { url: 'https://example.test/users' } };

function errorOf(
  schema: { safeParse(v: unknown): { success: boolean; error?: unknown } },
  value: unknown,
): string {
  const result = schema.safeParse(value);
  expect(result.success).toBe(false);
  return formatIssues(result.error as Parameters<typeof formatIssues>[0]);
}

describe('tool schema', () => {
  it('defaults the step type to request, the method to GET, modify and failureBehavior', () => {
    const tool = Tool.parse({ id: 't', steps: [step] });
    expect(tool.steps[0]).toMatchObject({
      modify: false,
      failureBehavior: 'fail',
      config: { type: 'request', method: 'GET' },
    });
    expect(tool.archived).toBe(false);
  });

  it('accepts a transform step', () => {
    const config = StepConfig.parse({ type: 'transform', transformCode: '(s) => s' });
    expect(config).toEqual({ type: 'transform', transformCode: '(s) => s' });
  });

  it('names the field when a step has no id', () => {
    expect(errorOf(Tool, { id: 't', steps: [{ config: step.config }] })).toMatch(/^steps\[0\]\.id: /);
  });

  it('names the field for an unknown step type', () => {
    expect(errorOf(Tool, { id: 't', steps: [{ id: 'a', config: { type: 'shell', url: 'x' } }] })).toMatch(
      /steps\[0\]\.config\.type: unknown step type/,
    );
  });

  it('names the field for a version that is not major.minor.patch', () => {
    expect(errorOf(Tool, { id: 't', version: '1.2', steps: [step] })).toMatch(
      /^version: must be a semantic version/,
    );
  });

  it('names the field for an unknown failureBehavior', () => {
    expect(errorOf(Tool, { id: 't', steps: [{ ...step, failureBehavior: 'maybe' }] })).toMatch(
      /^steps\[0\]\.failureBehavior: /,
    );
  });

  it('requires at least one step', () => {
    expect(errorOf(Tool, { id: 't', steps: [] })).toMatch(/^steps: a tool needs at least one step/);
  });

  it('refuses duplicate step ids, reserved names and ids that shadow an input', () => {
    const message = errorOf(Tool, {
      id: 't',
      inputSchema: { type: 'object', properties: { users: { type: 'string' } } },
      steps: [step, step, { ...step, id: 'currentItem' }, { ...step, id: 'users' }],
    });
    expect(message).toContain("steps[1].id: duplicate step id 'fetch'");
    expect(message).toContain("steps[2].id: 'currentItem' is a reserved name");
    expect(message).toContain("steps[3].id: step id 'users' would shadow the input 'users'");
  });

  it('refuses unknown keys in a step so typos are not silently dropped', () => {
    expect(errorOf(Tool, { id: 't', steps: [{ ...step, failureBehaviour: 'continue' }] })).toMatch(
      /steps\[0\]: Unrecognized key: "failureBehaviour"/,
    );
  });

  it('refuses tool ids with a slash or that are dot segments', () => {
    expect(errorOf(ToolCreateBody, { id: 'a/b', steps: [step] })).toMatch(/^id: /);
    expect(errorOf(ToolCreateBody, { id: '..', steps: [step] })).toMatch(/^id: must not be/);
  });

  it('accepts the fields of a fetched tool in an update body', () => {
    const update = ToolUpdateBody.parse({ id: 't', name: 'n', createdAt: '2026-01-01T00:00:00.000Z' });
    expect(update.name).toBe('n');
  });

  it('accepts pageSize as a string or a number', () => {
    const paginated = (pageSize: unknown) => ({
      id: 't',
      steps: [{ ...step, config: { ...step.config, pagination: { type: 'pageBased', pageSize } } }],
    });
    expect(Tool.safeParse(paginated('100')).success).toBe(true);
    expect(Tool.safeParse(paginated(100)).success).toBe(true);
    expect(errorOf(Tool, paginated('ten'))).toMatch(/pagination\.pageSize/);
  });
});

describe('run request schema', () => {
  it('accepts tool: webhook urls and http urls only', () => {
    expect(RunOptions.safeParse({ webhookUrl: 'tool:next-tool' }).success).toBe(true);
    expect(RunOptions.safeParse({ webhookUrl: 'https://hooks.example.test/x' }).success).toBe(true);
    expect(errorOf(RunOptions, { webhookUrl: 'ftp://x' })).toMatch(/^webhookUrl: must be an http\(s\) URL/);
  });

  it('refuses server-only request sources from clients', () => {
    expect(errorOf(RunRequest, { options: { requestSource: 'webhook' } })).toMatch(
      /^options\.requestSource: /,
    );
    expect(RunRequest.safeParse({ options: { requestSource: 'cli' } }).success).toBe(true);
  });

  it('refuses a timeout that is not a positive whole number of milliseconds', () => {
    expect(errorOf(RunRequest, { options: { timeout: 1.5 } })).toMatch(/^options\.timeout: /);
  });
});

describe('system schema', () => {
  it('checks credentials against the auth method without echoing their values', () => {
    const message = errorOf(SystemCreateBody, {
      id: 'crm',
      authType: 'basic',
      credentials: { username: 'u', passwrd: 'hunter2-secret' },
    });
    expect(message).toContain('credentials.password: required for authType basic');
    expect(message).not.toContain('hunter2-secret');
  });

  it('defaults the environment to prod', () => {
    expect(SystemCreateBody.parse({ id: 'crm' }).environment).toBe('prod');
  });
});

describe('system update schema', () => {
  it('accepts placeholders sent back unchanged in place of credential values', () => {
    const update = SystemUpdateBody.safeParse({
      authType: 'oauth',
      credentials: {
        clientId: '<<crm_clientId>>',
        clientSecret: '<<crm_clientSecret>>',
        authorizationUrl: '<<crm_authorizationUrl>>',
        tokenUrl: 'https://auth.example.test/token',
      },
    });
    expect(update.success).toBe(true);
  });
});

describe('unknown keys', () => {
  function messageOf(
    schema: Parameters<typeof formatIssues>[2] & { safeParse(v: unknown): unknown },
    value: unknown,
  ) {
    const result = (schema as typeof RunRequest).safeParse(value);
    expect(result.success).toBe(false);
    return formatIssues((result as { error: Parameters<typeof formatIssues>[0] }).error, undefined, schema);
  }

  it('suggest the field a run request meant: payload → inputs, a misspelt option', () => {
    expect(messageOf(RunRequest, { payload: { a: 1 } })).toContain("'payload': did you mean 'inputs'?");
    expect(messageOf(RunRequest, { options: { asynch: true } })).toMatch(
      /^options: .*'asynch': did you mean 'async'\?/,
    );
  });

  it('suggest a near spelling inside nested tool fields, and nothing for a key unlike any', () => {
    const misspelt = messageOf(ToolCreateBody, {
      id: 't',
      steps: [{ ...step, failureBehaviour: 'continue' }],
    });
    expect(misspelt).toContain("'failureBehaviour': did you mean 'failureBehavior'?");
    expect(messageOf(RunRequest, { zzzzzz: 1 })).not.toContain('did you mean');
  });
});
