/** The schema rules behind superglue-client compatibility: ids, systemIds, limits, request and system fields. */
import { describe, expect, it } from 'vitest';
import { ListToolsQuery } from '../../../contract/api/bodies.ts';
import { isApiError, KG_ERR_UNSUPPORTED_FIELD } from '../../../contract/api/errors.ts';
import { DraftRunRequest, RunRequest, StepRunRequest } from '../../../contract/api/run.ts';
import {
  authTypeFromSuperglue,
  SystemCreateBody,
  SystemUpdateBody,
  superglueAuthenticationType,
} from '../../../contract/api/system.ts';
import { ToolCreateBody, ToolDefinition, ToolId, unusedSystemIds } from '../../../contract/api/tool.ts';
import { resourceNameForId } from '../../../contract/resources/convert.ts';
import { stepResultsWithoutData } from '../../../runs/execute-sync.ts';
import { RunReport } from '../../../runs/execution/index.ts';
import { refuseUnsupportedFields } from '../../../runs/requests.ts';

const step = { id: 'a', config: { url: '/x', systemId: 'crm' } };

describe('tool ids', () => {
  it('allow inner spaces (the example My Tool of docs/api-decisions.md), nothing else that breaks paths or names', () => {
    for (const id of ['My Tool', 'a b  c', 'crm-sync', 'x.y', 'ünï cödé'])
      expect(ToolId.safeParse(id).success).toBe(true);
    for (const id of [
      ' lead',
      'trail ',
      'tab\there',
      'new\nline',
      'a/b',
      'a\\b',
      '.',
      '..',
      '',
      'x'.repeat(129),
    ])
      expect(ToolId.safeParse(id).success, JSON.stringify(id)).toBe(false);
    // Not a DNS name: the resource gets a derived name, the id stays in spec.id.
    expect(resourceNameForId('My Tool')).toMatch(/^my-tool-[0-9a-f]{10}$/);
  });

  it('reserve run and step for new tools only (a definition run unsaved may use them)', () => {
    const body = (id: string) => ({ id, steps: [step] });
    expect(ToolCreateBody.safeParse(body('run')).error?.issues[0]?.message).toContain("'run' is reserved");
    expect(ToolCreateBody.safeParse(body('step')).success).toBe(false);
    expect(ToolCreateBody.safeParse(body('runner')).success).toBe(true);
    expect(ToolDefinition.safeParse(body('run')).success).toBe(true);
  });
});

describe('systemIds', () => {
  it('is derived from the steps: empty passes, ids no step uses are refused with the field named', () => {
    expect(unusedSystemIds([], [step])).toEqual([]);
    expect(unusedSystemIds(undefined, [step])).toEqual([]);
    expect(unusedSystemIds(['crm', 'crm'], [step])).toEqual([]);
    expect(unusedSystemIds(['crm', 'erp'], [step])).toEqual(['erp']);
    const refused = ToolCreateBody.safeParse({ id: 't', steps: [step], systemIds: ['erp'] });
    expect(refused.error?.issues).toEqual([
      expect.objectContaining({
        path: ['systemIds'],
        message: expect.stringContaining("(the steps use 'crm')"),
      }),
    ]);
    // Not stored: the parsed tool keeps no trace of it beyond the body.
    expect(ToolCreateBody.parse({ id: 't', steps: [step], systemIds: ['crm'] }).systemIds).toEqual(['crm']);
  });
});

describe('GET /v1/tools?limit', () => {
  it('clamps above the maximum instead of refusing', () => {
    expect(ListToolsQuery.parse({ limit: '1000' }).limit).toBe(100);
    expect(ListToolsQuery.parse({}).limit).toBe(50);
    expect(ListToolsQuery.safeParse({ limit: '0' }).success).toBe(false);
  });
});

describe('run requests', () => {
  it('accept the fields superglue clients send and still refuse typos by name', () => {
    expect(
      RunRequest.safeParse({
        inputs: {},
        includeStepResultData: false,
        files: {},
        stateFixture: {},
        runId: 'r-1',
        options: {
          requestSource: 'cli',
          traceId: 'b0f4',
          clientInfo: { name: 'sg', version: '1.1.35', userAgent: 'sg/1.1.35' },
          pinnedCredentials: {},
          credentialsList: {},
        },
      }).success,
    ).toBe(true);
    const typo = RunRequest.safeParse({ includeStepResultsData: false });
    expect(typo.error?.issues[0]).toMatchObject({
      code: 'unrecognized_keys',
      keys: ['includeStepResultsData'],
    });
  });

  it('refuse superglue-only features only when given a value that would matter', () => {
    expect(() => refuseUnsupportedFields({ files: {}, options: { pinnedCredentials: {} } })).not.toThrow();
    for (const request of [
      { files: { report: { kind: 'execution_file' } } },
      { options: { credentialsList: { crm: 'set-1' } } },
    ]) {
      let raised: unknown;
      try {
        refuseUnsupportedFields(request);
      } catch (error) {
        raised = error;
      }
      expect(isApiError(raised, KG_ERR_UNSUPPORTED_FIELD)).toBe(true);
    }
  });

  it('drafts take payload or inputs (not both); step runs check stepId and systemIds against the step', () => {
    const tool = { id: 't', steps: [step] };
    expect(
      DraftRunRequest.safeParse({
        tool,
        payload: {},
        executionKind: 'draft',
        draftId: 'd',
        parentToolId: 't',
      }).success,
    ).toBe(true);
    expect(DraftRunRequest.safeParse({ tool, payload: {}, inputs: {} }).success).toBe(false);
    expect(StepRunRequest.safeParse({ step, stepId: 'a', systemIds: ['crm'], stepIndex: 0 }).success).toBe(
      true,
    );
    expect(StepRunRequest.safeParse({ step, stepId: 'b' }).success).toBe(false);
    expect(StepRunRequest.safeParse({ step, systemIds: ['erp'] }).success).toBe(false);
  });

  it('step results without data keep success, error, notes and the timing measured', () => {
    const report = new RunReport({ runId: 'r', toolId: 't' }, {});
    report.event({ type: 'step_started', stepId: 'a' }, Date.parse('2026-01-01T00:00:00.000Z'));
    report.event(
      { type: 'step_finished', result: { stepId: 'a', success: true } },
      Date.parse('2026-01-01T00:00:00.250Z'),
    );
    expect(
      stepResultsWithoutData(
        report.timed([
          { stepId: 'a', success: true, data: { big: 1 }, notes: ['n'] },
          { stepId: 'b', success: false, data: null, error: 'boom' },
        ]),
      ),
    ).toEqual([
      {
        stepId: 'a',
        success: true,
        notes: ['n'],
        startedAt: '2026-01-01T00:00:00.000Z',
        durationMs: 250,
      },
      { stepId: 'b', success: false, error: 'boom' },
    ]);
  });
});

describe("systems in superglue's terms", () => {
  it('maps authentication.type to authType when none is given, and authType back for display', () => {
    expect(authTypeFromSuperglue('api_key', ['bearerToken'])).toBe('bearer');
    expect(authTypeFromSuperglue('api_key', ['botToken'])).toBe('botToken');
    expect(authTypeFromSuperglue('api_key', ['apiKey', 'x'])).toBe('apiKey');
    expect(authTypeFromSuperglue('api_key', ['api_key'])).toBeUndefined();
    expect(authTypeFromSuperglue('basic_auth', [])).toBe('basic');
    expect(authTypeFromSuperglue('oauth2', [])).toBe('oauth');
    expect(authTypeFromSuperglue('connection_string', [])).toBe('dataStore');
    expect(superglueAuthenticationType('customHeaders')).toBe('api_key');
    expect(superglueAuthenticationType(undefined)).toBe('none');
  });

  it('accepts the fields sg system create|edit send, stores none of superglue-only ones', () => {
    const created = SystemCreateBody.parse({
      id: 'crm',
      name: 'CRM',
      url: 'https://crm.example',
      specificInstructions: 'use v2',
      templateName: 'hubspot',
      icon: 'hubspot',
      tags: ['sales'],
      metadata: { a: 1 },
      requiredCredentialKeys: ['api_key'],
      documentationFiles: { uploadFileIds: [] },
      tunnel: null,
      credentials: { bearerToken: 't0k3n' },
      authentication: { type: 'api_key', config: {} },
    });
    expect(created).toEqual({
      id: 'crm',
      name: 'CRM',
      url: 'https://crm.example',
      environment: 'prod',
      credentials: { bearerToken: 't0k3n' },
      authType: 'bearer',
    });
    // An explicit authType wins; the credential shape is still checked for the resulting authType.
    expect(
      SystemCreateBody.parse({ id: 'x', authType: 'none', authentication: { type: 'basic_auth' } }).authType,
    ).toBe('none');
    expect(
      SystemCreateBody.safeParse({ id: 'x', authentication: { type: 'basic_auth' }, credentials: { a: 'b' } })
        .success,
    ).toBe(false);
    // A tunnel is not a gateway: refused rather than ignored (the system would be reached directly).
    expect(SystemUpdateBody.safeParse({ tunnel: { tunnelId: 'tn' } }).error?.issues[0]?.message).toContain(
      'gateway',
    );
    expect(SystemUpdateBody.parse({ hasUserCredentials: true, name: 'n' })).toEqual({ name: 'n' });
  });
});
