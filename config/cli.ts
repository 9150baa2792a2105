/**
 * Settings of the client commands (`kubeglue run`, `runs`, `logs`, `tools`, `schedules`): which kubeglue
 * API they talk to, with which key. Each may also come from the CLI's config file (docs/cli.md); a
 * variable that is set wins over the file.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { path, text } from './schemas.ts';
import { type Environment, section, setting } from './setting.ts';

/** Where the client commands talk to when neither KUBEGLUE_URL nor the config file says: `npm start`. */
export const DEFAULT_CLI_URL = 'http://127.0.0.1:8080';

/** An http(s) URL; a trailing `/v1` (the API's prefix, as `$API` holds it in the docs) is accepted. */
export const cliApiUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
  .transform((value) => value.replace(/\/+$/, '').replace(/\/v1$/, ''))
  .meta({ kind: 'URL' });

export const CLI = section(
  'The CLI',
  'Read by the client commands of `kubeglue` (`run`, `runs`, `logs`, `tools`, `schedules`; ' +
    '[cli.md](cli.md)), never by a server role. Each may also be set in the config file, whose ' +
    'path `KUBEGLUE_CLI_CONFIG` gives; a variable that is set wins over the file.',
  {
    cli: {
      url: setting(
        'KUBEGLUE_URL',
        cliApiUrl.optional(),
        undefined,
        ['cli'],
        `the kubeglue API the client commands call, e.g. ${DEFAULT_CLI_URL} (a trailing /v1 is accepted; unset: the config file's url, else ${DEFAULT_CLI_URL})`,
      ),
      apiKey: setting(
        'KUBEGLUE_API_KEY',
        text.optional(),
        undefined,
        ['cli'],
        "the API key the client commands send as a Bearer token (unset: the config file's apiKey)",
      ),
      configFile: setting(
        'KUBEGLUE_CLI_CONFIG',
        path.optional(),
        undefined,
        ['cli'],
        'the config file of the client commands, JSON with url and apiKey (unset: $XDG_CONFIG_HOME/kubeglue/config.json, else ~/.config/kubeglue/config.json); one holding a key must be readable by its owner only',
      ),
    },
  },
);

/** The config file the client commands read: the setting, else the XDG place (env: the process's). */
export function cliConfigPath(configured: string | undefined, env: Environment = process.env): string {
  if (configured) return configured;
  const base = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'kubeglue', 'config.json');
}
