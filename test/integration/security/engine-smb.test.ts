/**
 * SMB steps under the engine's security rules, against a real smbd: the egress guard at connect time,
 * credentials only for the system's own server, inputs that stay data inside operation paths, and
 * credential values scrubbed from results and errors. Real engine (sandbox, protocols), real Samba.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResolvedSystem } from '../../../contract/wire/run-order.ts';
import type { EngineResult } from '../../../engine/types.ts';
import { sambaMissing, startSamba, type TestSamba } from '../../support/samba.ts';
import { DENY_PRIVATE, useTestEngine } from '../../support/security-engine.ts';

const skip = sambaMissing();

function errorOf(result: EngineResult): string {
  return result.stepResults[0]?.error ?? `(no step error; run: ${result.status} ${result.error ?? ''})`;
}

describe.skipIf(skip)('SMB steps and the security rules', () => {
  const engine = useTestEngine();
  let samba: TestSamba;
  let nas: ResolvedSystem;
  const logons = async () => (await samba.authLog()).length;

  beforeAll(async () => {
    samba = await startSamba();
    await writeFile(join(samba.shares.files, 'keep.txt'), 'keep me');
    nas = {
      id: 'nas',
      url: `${samba.url}/files`,
      credentials: { username: samba.username, password: samba.password, domain: samba.workgroup },
    } as ResolvedSystem;
  });
  afterAll(async () => {
    await samba?.stop();
  });

  const step = (config: Record<string, unknown>, modify = false) => ({
    steps: [{ id: 's', modify, config: { systemId: 'nas', url: '/', ...config } }],
  });

  describe('the egress guard', () => {
    it('refuses the metadata address at once', async () => {
      const result = await engine.run({
        steps: [{ id: 's', config: { url: 'smb://u:p@169.254.169.254/share', body: { operation: 'list' } } }],
      });
      expect(errorOf(result)).toBe(
        'SMB connect to //169.254.169.254:445/share failed: refused to connect to 169.254.169.254: the cloud metadata address',
      );
    });

    it('refuses a private server under deny unless the system allows its network', async () => {
      const before = await logons();
      const refused = await engine.run(step({ body: { operation: 'list' } }), {
        egress: DENY_PRIVATE,
        systems: [nas],
      });
      expect(errorOf(refused)).toContain('refused to connect to 127.0.0.1: a loopback address');
      expect(await logons()).toBe(before);
      const allowed = await engine.run(step({ body: { operation: 'list' } }), {
        egress: DENY_PRIVATE,
        systems: [{ ...nas, allowedNetworks: ['127.0.0.1/32'] }],
      });
      expect(allowed.status, errorOf(allowed)).toBe('success');
    });

    it('judges the address a host name resolves to when connecting, not the name', async () => {
      const byName = { ...nas, url: `smb://localhost:${samba.port}/files` };
      const result = await engine.run(step({ body: { operation: 'list' } }), {
        egress: DENY_PRIVATE,
        systems: [byName],
      });
      expect(errorOf(result)).toMatch(
        /refused to connect to localhost \((127\.0\.0\.1|::1)\): a loopback address/,
      );
    });
  });

  describe('credentials', () => {
    it("are not sent to a server that is not the system's own", async () => {
      const before = await logons();
      const result = await engine.run(
        step({ url: `smb://localhost:${samba.port}/files`, body: { operation: 'list' } }),
        { systems: [nas] },
      );
      expect(errorOf(result)).toMatch(/^SMB needs a username/);
      expect(result.stepResults[0]?.notes?.join(' ')).toContain(
        "the credentials of system 'nas' were not sent",
      );
      expect(await logons()).toBe(before);
    });

    it("come from the system's connection URL when the system has no base URL", async () => {
      const password = encodeURIComponent(samba.password);
      const connection = {
        id: 'share',
        credentials: { url: `smb://URLDOM;${samba.username}:${password}@127.0.0.1:${samba.port}/files` },
      } as ResolvedSystem;
      const result = await engine.run(
        step({ systemId: 'share', url: '<<share_url>>', body: { operation: 'get', path: 'keep.txt' } }),
        { systems: [connection] },
      );
      expect(result.status, errorOf(result)).toBe('success');
      expect(result.data).toMatchObject({ content: 'keep me' });
      expect((await samba.authLog()).at(-1)).toContain('user [URLDOM]\\[root]');
      expect(JSON.stringify(result)).not.toContain(password);
    });

    it('are scrubbed from what a step returns and from its errors', async () => {
      const result = await engine.run(
        {
          steps: [
            {
              id: 'echo',
              modify: true,
              config: {
                systemId: 'nas',
                url: '/',
                body: [
                  { operation: 'put', path: 'echo.txt', content: 'password=<<nas_password>>' },
                  { operation: 'get', path: 'echo.txt' },
                ],
              },
            },
            {
              id: 'missing',
              failureBehavior: 'continue',
              config: {
                systemId: 'nas',
                url: '/',
                body: { operation: 'get', path: 'nope-<<nas_password>>.txt' },
              },
            },
          ],
        },
        { systems: [nas] },
      );
      const text = JSON.stringify(result);
      expect(text).toContain('password=');
      expect(result.stepResults[1]?.error).toMatch(/^SMB get \/nope-\*\*\*\.txt failed: /);
      expect(text).not.toContain(samba.password);
      expect(text).not.toContain(encodeURIComponent(samba.password));
    });
  });

  describe('inputs', () => {
    it('stay data inside an operation path: no second operation, no way out of the share', async () => {
      const attempts = ['keep.txt", "operation": "delete', '../../../../etc/passwd', 'keep.txt\u0000x'];
      for (const name of attempts) {
        const result = await engine.run(
          {
            steps: [
              {
                id: 's',
                config: { systemId: 'nas', url: '/', body: { operation: 'get', path: '<<name>>' } },
              },
            ],
          },
          { systems: [nas], inputs: { name } },
        );
        expect(result.status, name).toBe('failed');
        expect(errorOf(result)).toMatch(/^SMB get .* failed: /);
      }
      const kept = await engine.run(step({ body: { operation: 'get', path: 'keep.txt' } }), {
        systems: [nas],
      });
      expect(kept.data).toMatchObject({ content: 'keep me' });
    });
  });
});
