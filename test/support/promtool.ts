/**
 * Prometheus' promtool for the chart's alert tests: on PATH, or where `npm test` extracts it from Debian's
 * prometheus package (~/.cache/kubeglue-promtool/bin). Without it those tests are skipped locally and
 * fail in CI.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { promtoolPath, skipReason } from './prerequisites.ts';

export const PROMTOOL = promtoolPath();
// Skipped without it (the reason is in the run's report); an error under CI=true.
skipReason('promtool');

/** Runs promtool; resolves with its output, rejects with it (stdout and stderr) when it fails. */
export async function promtool(args: string[]): Promise<string> {
  if (!PROMTOOL) throw new Error('promtool not found');
  try {
    const { stdout, stderr } = await promisify(execFile)(PROMTOOL, args, { timeout: 60_000 });
    return stdout + stderr;
  } catch (error) {
    const failed = error as Error & { stdout?: string; stderr?: string };
    throw new Error(`promtool ${args.join(' ')}:\n${failed.stdout ?? ''}${failed.stderr ?? failed.message}`);
  }
}
