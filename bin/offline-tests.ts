/**
 * `kubeglue test -f`: a tool's tests run in the CLI's own process, with no server and no network (for
 * GitOps CI). The runner is the server's (runs/tool-tests.ts); the engine runs here with the sandbox and
 * the data bounds of the runner role's settings, and protocols that refuse every call: a test's calls are
 * answered from its recording (engine/replay.ts), so one that reached these would be a bug, and fails.
 * The systems are the test's (`systems`: base URLs) with their credentials as placeholders.
 */
import { engineSettings, loadSettings } from '../config/config.ts';
import type { Tool } from '../contract/api/tool.ts';
import type { ToolTestAnswer } from '../contract/api/tool-test-result.ts';
import { createEngineDeps } from '../engine/deps.ts';
import { runTool } from '../engine/run-tool.ts';
import type { Protocols } from '../engine/types.ts';
import { offlineSystems, runToolTests } from '../runs/tool-tests.ts';

const refuse = async (): Promise<never> => {
  throw new Error('kubeglue test makes no network call: every call must be answered from the recording');
};

const NO_NETWORK: Protocols = {
  http: refuse,
  postgres: refuse,
  ftp: refuse,
  sftp: refuse,
  redis: refuse,
  mysql: refuse,
  smb: refuse,
};

export async function runTestsOffline(tool: Tool): Promise<ToolTestAnswer> {
  const settings = engineSettings(loadSettings('runner'));
  const { deps, sandbox } = createEngineDeps({ ...settings, protocols: NO_NETWORK });
  try {
    return await runToolTests(tool, {
      systems: async (test) => offlineSystems(tool, test),
      execute: (order) => runTool(deps, { ...order, signal: new AbortController().signal }),
    });
  } finally {
    sandbox.dispose();
  }
}
