/**
 * The CLI never prints its own API key (docs/cli.md, Configuration). A server or a proxy in front of it
 * may echo the request's headers in an error; here a real HTTP server answers every call the commands
 * make with such errors (a JSON error answer quoting the Authorization header, a proxy's HTML page with
 * the header where the CLI cuts the text short), and `kubeglue` runs as a process against it.
 */
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../support/cli.ts';
import { useTempDir } from '../../support/fixture.ts';
import { type TargetRequest, useHttpTarget } from '../../support/http-target.ts';

const KEY = 'kg_cli-own-key-3f9a7c1e5b2d8046aa17e0c4d9b36f25';
/** Long enough that seeing it means the key leaked, even cut short. */
const KEY_PART = KEY.slice(0, 24);

/** The request's headers as a server that echoes them writes them. */
const headersOf = (req: TargetRequest) =>
  Object.entries(req.headers)
    .map(([name, value]) => `${name}: ${String(value)}`)
    .join('\n');

describe('the CLI blanks its API key out of what it prints', () => {
  const target = useHttpTarget();
  let env: Record<string, string>;

  beforeAll(() => {
    env = { KUBEGLUE_URL: target.url, KUBEGLUE_API_KEY: KEY };
    // A server's JSON error answer (the API's error shape) quoting the header.
    const jsonError = (req: TargetRequest) => ({
      status: 500,
      body: {
        error: {
          message: `upstream refused ${req.method} ${req.path} with headers {${headersOf(req)}}`,
          code: 'KG_ERR_INTERNAL',
          hint: `retry with ${String(req.headers.authorization)}`,
        },
      },
    });
    // A proxy's page whose echoed key runs across the 200th character, where the CLI cuts a page short:
    // blanking the key after the cut would leave its first 26 characters.
    const proxyPage = (req: TargetRequest) => ({
      status: 502,
      headers: { 'content-type': 'text/html' },
      body: `<html><body>${'='.repeat(140)}authorization: ${String(req.headers.authorization)}</body></html>`,
    });
    target.route('GET', '/v1/runs', jsonError);
    target.route('GET', '/v1/tools', proxyPage);
    target.route('GET', '/v1/schedules', jsonError);
    target.route('GET', '/v1/runs/some-run', proxyPage);
    target.route('POST', '/v1/tools/some-tool/run', jsonError);
    target.route('GET', '/v1/logs/stream', jsonError);
  });

  it.each(
    [
      ['runs'],
      ['runs', '--output', 'json'],
      ['tools'],
      ['tools', '--output', 'json'],
      ['schedules'],
      ['schedules', '--output', 'json'],
      ['logs', 'some-run'],
      ['logs', 'some-run', '--follow'],
      ['run', 'some-tool'],
      ['run', 'some-tool', '--output', 'json'],
      ['run', 'some-tool', '--follow'],
    ].map((args) => [args.join(' '), args] as const),
  )('kubeglue %s: the echoed key is blanked on stdout and stderr', async (_command, args) => {
    const { code, stdout, stderr } = await runCli(args, env);
    expect(code).toBe(1);
    const printed = stdout + stderr;
    // The server did receive the key, and echoed it.
    expect(target.requests.at(-1)?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(printed).not.toContain(KEY_PART);
    expect(printed).toContain('Bearer <redacted>');
  });

  describe('a config file holding the key', () => {
    const dir = useTempDir('kubeglue-key-');

    it('is not quoted when it is not JSON (an unquoted key)', async () => {
      const path = join(dir.path, 'config.json');
      await writeFile(path, `{"url": "${target.url}", "apiKey": ${KEY}}`);
      await chmod(path, 0o600);
      const { code, stdout, stderr } = await runCli(['tools'], { KUBEGLUE_CLI_CONFIG: path });
      expect(code).toBe(2);
      expect(stderr).toContain(`the config file ${path} is not JSON: Unexpected token`);
      expect(stdout + stderr).not.toContain(KEY.slice(0, 8));
    });
  });
});
