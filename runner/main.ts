/**
 * runner/: the runner Pod program only — fetch the order from the internal API, run the engine, report,
 * exit.
 *
 * May import: contract, config, engine.
 *
 * Runs one run in this process, the same way a pool worker does: the runner Pod's entrypoint.
 * Usage: kubeglue runner [--order order.json] [--out result.json]
 * The order (a RunOrder, contract/wire/run-order.ts) is read from the file or stdin; the EngineResult is written as JSON to the
 * file or stdout. Exit code: 0 success, 2 failed or aborted, 1 could not run at all.
 * SIGTERM/SIGINT cancel the run, which then ends as aborted.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { parseArgs } from 'node:util';
import { engineSettings, loadSettings, type RunnerSettings } from '../config/config.ts';
import { createLogger } from '../contract/log.ts';
import { RunOrder } from '../contract/wire/run-order.ts';
import { createEngineDeps } from '../engine/deps.ts';
import { closeHttpAgent } from '../engine/protocols/http.ts';
import { closeConnectionPools } from '../engine/protocols/index.ts';
import { runTool } from '../engine/run-tool.ts';

const log = createLogger('runner');

async function runOrder(args: string[], settings: RunnerSettings): Promise<number> {
  const { values } = parseArgs({ args, options: { order: { type: 'string' }, out: { type: 'string' } } });
  const raw = values.order ? await readFile(values.order, 'utf8') : await text(process.stdin);
  const parsed = RunOrder.safeParse(JSON.parse(raw));
  if (!parsed.success) {
    log.error(
      `invalid run order: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
    return 1;
  }
  const controller = new AbortController();
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => controller.abort());
  // Private addresses are refused unless the deployment allows them (the runner's egress default).
  const { deps, sandbox } = createEngineDeps(engineSettings(settings));
  try {
    const result = await runTool(deps, { ...parsed.data, signal: controller.signal });
    const json = `${JSON.stringify(result)}\n`;
    if (values.out) await writeFile(values.out, json);
    else process.stdout.write(json);
    return result.status === 'success' ? 0 : 2;
  } finally {
    sandbox.dispose();
    await Promise.allSettled([closeHttpAgent(), closeConnectionPools()]);
  }
}

export async function main(args: string[]): Promise<void> {
  let settings: RunnerSettings;
  try {
    settings = loadSettings('runner');
  } catch (error) {
    log.fatal((error as Error).message);
    process.exitCode = 1;
    return;
  }
  // In a runner Pod the operator gives the run's id and token instead of an order: fetch it (pod-runner.ts).
  if (settings.runId && !args.some((arg) => arg === '--order' || arg.startsWith('--order='))) {
    const { runPod } = await import('./pod-runner.ts');
    process.exitCode = await runPod(settings);
    return;
  }
  try {
    process.exitCode = await runOrder(args, settings);
  } catch (error) {
    log.fatal((error as Error).message);
    process.exitCode = 1;
  }
}
