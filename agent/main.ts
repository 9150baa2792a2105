/**
 * agent/: the gateway agent program that runs in a private network.
 *
 * May import: contract, config.
 *
 * `kubeglue agent -config <path> [-debug]`: the gateway agent in a private network (docs/gateway.md).
 * Exits 2 on a bad configuration, 0 after SIGTERM/SIGINT or when a newer agent took its tunnel over.
 */
import { readFile } from 'node:fs/promises';
import { createLogger } from '../contract/log.ts';
import { GatewayAgent } from './agent.ts';
import { AgentConfigError, parseAgentConfig } from './config.ts';

const USAGE = 'usage: kubeglue agent -config <path> [-debug]';

export interface AgentArgs {
  configPath: string;
  debug: boolean;
}

/** Go-style single-dash flags as the interface names them; `--config`, `-config=path` work too. */
export function parseAgentArgs(args: readonly string[]): AgentArgs {
  let configPath: string | undefined;
  let debug = false;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] as string;
    const [flag, inline] = arg.replace(/^--?/, '-').split(/=(.*)/s, 2) as [string, string | undefined];
    if (flag === '-debug') debug = inline === undefined ? true : inline !== 'false';
    else if (flag === '-config') {
      configPath = inline ?? args[++index];
      if (!configPath) throw new AgentConfigError(`-config needs a path\n${USAGE}`);
    } else throw new AgentConfigError(`unknown argument '${arg}'\n${USAGE}`);
  }
  if (!configPath) throw new AgentConfigError(`-config <path> is required\n${USAGE}`);
  return { configPath, debug };
}

export async function main(args: string[]): Promise<void> {
  const log = createLogger('agent');
  let agent: GatewayAgent;
  try {
    const { configPath, debug } = parseAgentArgs(args);
    let text: string;
    try {
      text = await readFile(configPath, 'utf8');
    } catch (error) {
      throw new AgentConfigError(`cannot read ${configPath}: ${(error as NodeJS.ErrnoException).code}`);
    }
    const config = parseAgentConfig(text, configPath);
    agent = new GatewayAgent(config, {
      log,
      debug: debug ? (line) => log.debug(line) : undefined,
    });
    log(
      `tunnel '${config.tunnelId}' → ${config.serverUrl}; targets: ` +
        [...config.targets.values()].map((t) => `${t.name} (${t.protocol})`).join(', '),
    );
  } catch (error) {
    if (!(error instanceof AgentConfigError)) throw error;
    log.fatal(error.message);
    process.exitCode = 2;
    return;
  }
  const stop = (signal: string) => {
    log(`${signal}: closing the tunnel`);
    void agent.stop();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  await agent.run();
  log('stopped');
  process.removeAllListeners('SIGTERM');
  process.removeAllListeners('SIGINT');
}
