/**
 * bin/cli/: the client commands of `kubeglue` — run, try, runs, logs, tools, schedules — which talk to a
 * kubeglue API over HTTP like any other client (docs/cli.md). They share nothing with the server but the
 * contract's shapes and the settings registry. They call the API through the client the dashboard uses
 * too (contract/api/route-client.ts, client.ts here): each call names its route of the route table,
 * `routes.getRun` (contract/api/route-paths.ts), and every failure is an ApiFailure.
 *
 * May import: contract, config.
 *
 * Exit codes: 0 success; 1 a failed or aborted run, or an ApiFailure (an API error, an answer the CLI
 * cannot read, no answer); 2 a usage or configuration error (no API call made); 130 interrupted (Ctrl-C).
 *
 * Whatever a command prints, on stdout or stderr, passes through `keyless`: the API key it calls with is
 * blanked out of it, wherever an answer quoted it from.
 */
import { ApiFailure } from '../../contract/api/route-client.ts';
import { isApiCode } from './client.ts';
import {
  type CommandSpec,
  ConfigError,
  commandHelp,
  EXIT,
  type Io,
  parseCommandArgs,
  type Terminal,
  UsageError,
} from './command.ts';
import { logs } from './commands/logs.ts';
import { run } from './commands/run.ts';
import { runs } from './commands/runs.ts';
import { schedules } from './commands/schedules.ts';
import { test } from './commands/test.ts';
import { tools } from './commands/tools.ts';
import { tryDraft } from './commands/try.ts';
import { printable, printJson, withoutKey } from './output.ts';

export { commandHelp } from './command.ts';
export { printable } from './output.ts';
export { resolveConnection } from './settings.ts';

/** Every client command, in the order `kubeglue --help` lists them. */
export const COMMANDS: readonly CommandSpec[] = [
  run,
  tryDraft,
  runs,
  logs,
  tools,
  schedules,
  test,
] as readonly CommandSpec[];

/** Every command and subcommand (`runs resume`), each with its own help. */
export const ALL_COMMANDS: readonly CommandSpec[] = COMMANDS.flatMap((spec) => [
  spec,
  ...(spec.subcommands ?? []),
]);

export function findCommand(name: string): CommandSpec | undefined {
  return COMMANDS.find((spec) => spec.name === name);
}

/** `io` whose stdout and stderr never receive the API key, from the moment `connect` has given it. */
function keyless(io: Io): Io {
  let key: string | undefined;
  const blanked = (out: Terminal): Terminal => ({
    write: (text: string) => out.write(key === undefined ? text : withoutKey(text, key)),
    get isTTY() {
      return out.isTTY;
    },
    get columns() {
      return out.columns;
    },
  });
  return {
    ...io,
    stdout: blanked(io.stdout),
    stderr: blanked(io.stderr),
    connect: async () => {
      const connection = await io.connect();
      key = connection.apiKey;
      return connection;
    },
  };
}

/** Runs `kubeglue <spec.name> <argv>`; resolves with its exit code and never throws. */
export async function runCommand(spec: CommandSpec, argv: readonly string[], given: Io): Promise<number> {
  const sub = spec.subcommands?.find((one) => one.name === `${spec.name} ${argv[0]}`);
  if (sub) return runCommand(sub, argv.slice(1), given);
  const io = keyless(given);
  const name = `kubeglue ${spec.name}`;
  let output: 'text' | 'json' = 'text';
  try {
    const parsed = parseCommandArgs(spec, argv);
    if (parsed.help) {
      io.stdout.write(commandHelp(spec));
      return EXIT.ok;
    }
    output = parsed.output;
    return await spec.run({ values: parsed.values, args: parsed.args, output, io });
  } catch (error) {
    if (error instanceof UsageError) {
      const help = error instanceof ConfigError ? 'docs/cli.md' : `'${name} --help'`;
      io.stderr.write(`${name}: ${printable(error.message)}\n(see ${help})\n`);
      return EXIT.usage;
    }
    if (error instanceof ApiFailure) {
      if (output === 'json' && error.body !== undefined) printJson(io.stdout, error.body);
      io.stderr.write(
        `${name}: ${printable(`${error.message}${isApiCode(error) ? ` (${error.code})` : ''}`)}\n`,
      );
      if (error.hint) io.stderr.write(`${printable(error.hint)}\n`);
      return EXIT.failed;
    }
    if (io.signal.aborted) {
      io.stderr.write(`${name}: interrupted\n`);
      return EXIT.interrupted;
    }
    io.stderr.write(`${name}: ${printable((error as Error).message)}\n`);
    return EXIT.failed;
  }
}
