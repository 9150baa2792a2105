/**
 * A compressed response leaves a process's log clean: `kubeglue runner` (what a runner Pod runs) fetches a
 * gzip and a brotli body, decodes them, and prints no "ExperimentalWarning: DecompressInterceptor is
 * experimental" (engine/protocols/decompress.ts), while other warnings still reach its log.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { KUBEGLUE_BIN as CLI } from '../../support/cli.ts';
import { useTempDir } from '../../support/fixture.ts';
import { useHttpTarget } from '../../support/http-target.ts';
import { runOrder } from '../../support/run-order.ts';

const target = useHttpTarget();
const dir = useTempDir('kubeglue-decompress-');

/** `kubeglue runner --order file`: exit code, stdout and stderr apart. */
function runner(file: string, nodeOptions = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--no-node-snapshot', CLI, 'runner', '--order', file],
      { env: { ...process.env, KUBEGLUE_EGRESS_PRIVATE: 'allow', NODE_OPTIONS: nodeOptions } },
      (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stdout, stderr }),
    );
  });
}

describe('a compressed response', () => {
  it('is decoded by a runner, which prints no ExperimentalWarning', async () => {
    target.route('GET', '/gzip', {
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify({ packed: 'gzip' })),
    });
    target.route('GET', '/br', {
      headers: { 'content-type': 'application/json', 'content-encoding': 'br' },
      body: brotliCompressSync(JSON.stringify({ packed: 'br' })),
    });
    const order = runOrder({
      id: 'compressed',
      steps: [
        { id: 'gzip', config: { url: `${target.url}/gzip` } },
        { id: 'br', config: { url: `${target.url}/br` } },
      ],
      outputTransform: '(s) => [s.gzip.data, s.br.data]',
    });
    const file = join(dir.path, 'order.json');
    await writeFile(file, JSON.stringify(order));
    const { code, stdout, stderr } = await runner(file);
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({
      status: 'success',
      data: [{ packed: 'gzip' }, { packed: 'br' }],
    });
    expect(stderr).not.toContain('ExperimentalWarning');
    expect(stderr).not.toContain('DecompressInterceptor');
  });

  it('leaves other warnings of the process to its log', async () => {
    const file = join(dir.path, 'warns.json');
    const order = runOrder({ id: 'warns', steps: [{ id: 'gzip', config: { url: `${target.url}/gzip` } }] });
    await writeFile(file, JSON.stringify(order));
    // Another experimental warning, emitted as the process starts: it is not the interceptor's, and stays.
    const other = "process.emitWarning('Something else is experimental','ExperimentalWarning')";
    const { code, stderr } = await runner(file, `--import=data:text/javascript,${encodeURIComponent(other)}`);
    expect(code, stderr).toBe(0);
    expect(stderr).toContain('Something else is experimental');
    expect(stderr).not.toContain('DecompressInterceptor');
  });
});
