/**
 * Prometheus' promtool for the chart's alert tests: on PATH, or where .ci/run extracts it from Debian's
 * prometheus package (~/.cache/kubeglue-promtool/bin). Without it those tests are skipped locally and
 * fail in CI.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

function findPromtool(): string | undefined {
  try {
    const found = execFileSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).trim();
    if (found) return found;
  } catch {
    // not on PATH
  }
  const cached = join(
    process.env.KUBEGLUE_PROMTOOL_CACHE ?? join(homedir(), '.cache', 'kubeglue-promtool'),
    'bin',
    'promtool',
  );
  return existsSync(cached) ? cached : undefined;
}

export const PROMTOOL = findPromtool();
if (!PROMTOOL && process.env.CI === 'true') {
  throw new Error('promtool not found: .ci/run extracts it from Debian (see there)');
}

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
