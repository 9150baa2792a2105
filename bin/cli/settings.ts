/**
 * Which API the client commands call, with which key: KUBEGLUE_URL and KUBEGLUE_API_KEY (config/cli.ts),
 * else the config file, else the local default URL. A config file that holds a key is refused while
 * other users may read or write it, as ssh refuses such a private key: the key would be theirs too.
 */
import { readFile, stat } from 'node:fs/promises';
import { z } from 'zod';
import { cliApiUrl, cliConfigPath, DEFAULT_CLI_URL, loadSettings, SETTINGS } from '../../config/config.ts';
import type { Environment } from '../../config/setting.ts';
import { formatIssues } from '../../contract/format-issues.ts';
import { ConfigError } from './command.ts';

export interface Connection {
  /** The server's address, without a trailing `/` or `/v1`. */
  url: string;
  apiKey: string;
}

/** The config file: `{ "url": "https://kubeglue.example.com", "apiKey": "kg_…" }`, both optional. */
export const CliConfigFile = z.strictObject({
  url: cliApiUrl.optional(),
  apiKey: z.string().min(1).optional(),
});
export type CliConfigFile = z.infer<typeof CliConfigFile>;

/** Permission bits that let anyone but the owner read or write the file. */
const SHARED_BITS = 0o066;

async function readConfigFile(path: string, required: boolean): Promise<CliConfigFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !required) return {};
    throw new ConfigError(`cannot read the config file ${path}: ${code ?? (error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    // JSON.parse may quote the text around the mistake (`Unexpected token 'k', ..."apiKey": kg_se"...`),
    // which may be the key: only what comes before the quote is said.
    const said = (error as Error).message.split(/,? ?(?:\.\.\.)?"/)[0];
    throw new ConfigError(`the config file ${path} is not JSON: ${said}`);
  }
  const parsed = CliConfigFile.safeParse(json);
  if (!parsed.success) {
    throw new ConfigError(`the config file ${path}: ${formatIssues(parsed.error, undefined, CliConfigFile)}`);
  }
  if (parsed.data.apiKey !== undefined && process.platform !== 'win32') {
    const mode = (await stat(path)).mode & 0o777;
    if ((mode & SHARED_BITS) !== 0) {
      throw new ConfigError(
        `the config file ${path} holds an API key and other users may read or write it ` +
          `(mode ${mode.toString(8).padStart(4, '0')}); make it yours alone: chmod 600 ${path}`,
      );
    }
  }
  return parsed.data;
}

/** The API and key the commands use; throws a ConfigError when they cannot be known. */
export async function resolveConnection(env: Environment): Promise<Connection> {
  let settings: ReturnType<typeof loadSettings<'cli'>>;
  try {
    settings = loadSettings('cli', env);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const path = cliConfigPath(settings.cli.configFile, env);
  const file = await readConfigFile(path, settings.cli.configFile !== undefined);
  const apiKey = settings.cli.apiKey ?? file.apiKey;
  if (apiKey === undefined) {
    throw new ConfigError(
      `no API key: set ${SETTINGS.tree.cli.apiKey.name}, or apiKey in the config file ${path}`,
    );
  }
  return { url: settings.cli.url ?? file.url ?? DEFAULT_CLI_URL, apiKey };
}
