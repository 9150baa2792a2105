/**
 * `kubeglue embedded` (`npm start`): the embedded deployment in one process (bin/embedded.ts),
 * configured by KUBEGLUE_* environment variables. SIGINT/SIGTERM shut it down gracefully.
 */
import { loadSettings } from '../config/config.ts';
import { createLogger } from '../contract/log.ts';
import { installLastResortHandlers } from '../platform/last-resort.ts';
import { startEmbedded } from './embedded.ts';

const log = createLogger('embedded');

export async function main(_args: string[]): Promise<void> {
  const config = loadSettings('embedded');
  const embedded = await startEmbedded(config, log);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: shutting down (in-flight runs get ${config.shutdownGraceMs} ms to finish)`);
    embedded.close().then(
      () => log('stopped'),
      (error: unknown) => {
        log.error(`shutdown failed: ${(error as Error).message}`);
        process.exitCode = 1;
      },
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
  // What nothing caught: a rejection is logged, an exception shuts down (platform/last-resort.ts).
  installLastResortHandlers({
    log: log.error,
    shutdown: () => embedded.close(),
    hardExitMs: config.shutdownGraceMs + 10_000,
  });
  // Only now: whoever waits for this line may signal at once, and must find the handlers installed.
  log(`ready on ${embedded.url} (OpenAPI: ${embedded.url}/v1/openapi.json)`);
}
