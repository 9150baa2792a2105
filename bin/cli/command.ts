/**
 * What a client command is: its options (parsed with Node's `util.parseArgs`), its positional arguments
 * and its help, declared once. The help text (`kubeglue <command> --help`) is made from the declaration,
 * and docs/cli.md shows that text (test/unit/cli/help.test.ts compares them).
 */
import { parseArgs } from 'node:util';
import type { Tool } from '../../contract/api/tool.ts';
import type { ToolTestAnswer } from '../../contract/api/tool-test-result.ts';
import { suggestKey } from '../../contract/format-issues.ts';
import type { Connection } from './settings.ts';

/** A stream the commands write to: stdout or stderr (a TTY has isTTY and columns). */
export interface Terminal {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** What a command reaches of its process: passed in, so a command never touches globals. */
export interface Io {
  stdout: Terminal;
  stderr: Terminal;
  /** Where the API and key come from (config/cli.ts, the config file). */
  connect(): Promise<Connection>;
  /** Aborted by Ctrl-C. */
  signal: AbortSignal;
  /** The package version, sent as the User-Agent. */
  version: string;
  /**
   * Runs a tool's tests in this process with no server and no network (`kubeglue test -f`): the engine,
   * which the client commands may not import, given by bin/kubeglue.ts (bin/offline-tests.ts).
   */
  offlineTests?: ((tool: Tool) => Promise<ToolTestAnswer>) | undefined;
}

/** The exit codes of every client command. */
export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;

/** A mistake in how the command was called: exit code 2, no API call made. */
export class UsageError extends Error {}

/** A mistake in the CLI's configuration (variables, config file): exit code 2, no API call made. */
export class ConfigError extends UsageError {}

export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: true;
  short?: string;
  /** How the value is shown in the help: `<key=value>`. */
  value?: string;
  help: string;
}

type OptionValue<O extends OptionSpec> = O['type'] extends 'boolean'
  ? boolean | undefined
  : O['multiple'] extends true
    ? string[] | undefined
    : string | undefined;

export type OptionValues<O extends Record<string, OptionSpec>> = { [K in keyof O]: OptionValue<O[K]> };

export type OutputMode = 'text' | 'json';

export interface Invocation<O extends Record<string, OptionSpec>> {
  values: OptionValues<O>;
  /** The positional arguments, by the names the command declares. */
  args: Record<string, string>;
  output: OutputMode;
  io: Io;
}

export interface CommandSpec<O extends Record<string, OptionSpec> = Record<string, OptionSpec>> {
  name: string;
  /** One line for `kubeglue --help`. */
  summary: string;
  /** Names of the positional arguments, all required: `['toolId']` → `<toolId>`. */
  positionals: readonly string[];
  options: O;
  /** Lines of the help between the usage and the options. */
  about: readonly string[];
  examples: readonly string[];
  /**
   * Commands under this one, named `<name> <word>` (`runs resume`): `kubeglue runs resume …` runs the
   * subcommand, whose help and options are its own.
   */
  subcommands?: readonly CommandSpec[];
  run(invocation: Invocation<O>): Promise<number>;
}

/** A command, with its option types kept for its run function. */
export function command<const O extends Record<string, OptionSpec>>(spec: CommandSpec<O>): CommandSpec<O> {
  return spec;
}

/** The options every command takes. */
const COMMON = {
  output: {
    type: 'string',
    value: '<text|json>',
    help: 'text (default) for people, json for scripts: one JSON document on stdout',
  },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
} as const satisfies Record<string, OptionSpec>;

function optionsOf(spec: CommandSpec): Record<string, OptionSpec> {
  return { ...spec.options, ...COMMON };
}

export function usageLine(spec: CommandSpec): string {
  return ['kubeglue', spec.name, ...spec.positionals.map((name) => `<${name}>`), '[options]'].join(' ');
}

/** `kubeglue <command> --help`. */
export function commandHelp(spec: CommandSpec): string {
  const options = Object.entries(optionsOf(spec)).map(([name, option]) => {
    const flag = `${option.short ? `-${option.short}, ` : ''}--${name}${option.value ? ` ${option.value}` : ''}`;
    return [flag, option.help];
  });
  const width = Math.max(...options.map(([flag]) => (flag as string).length)) + 2;
  return [
    `usage: ${usageLine(spec)}`,
    '',
    ...spec.about,
    '',
    'options:',
    ...options.map(([flag, help]) => `  ${(flag as string).padEnd(width)}${help}`),
    '',
    'examples:',
    ...spec.examples.map((example) => `  ${example}`),
    '',
  ].join('\n');
}

interface ParseArgsError {
  code?: string;
  message: string;
}

/** parseArgs' messages, in the CLI's words. */
function usageProblem(spec: CommandSpec, error: ParseArgsError): string {
  const unknown = /Unknown option '([^']+)'/.exec(error.message)?.[1];
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown) {
    const known = Object.keys(optionsOf(spec)).map((name) => `--${name}`);
    const closest = suggestKey(unknown, known);
    return `unknown option '${unknown}'${closest ? ` (did you mean '${closest}'?)` : ''}`;
  }
  if (error.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    const extra = /Unexpected argument '([^']+)'/.exec(error.message)?.[1] ?? '';
    return `unexpected argument '${extra}'`;
  }
  return error.message.split('. ')[0] ?? error.message;
}

export type Parsed<O extends Record<string, OptionSpec>> =
  | { help: true }
  | { help: false; values: OptionValues<O>; args: Record<string, string>; output: OutputMode };

/** The command's arguments; throws a UsageError naming what is wrong. `--help` anywhere wins. */
export function parseCommandArgs<O extends Record<string, OptionSpec>>(
  spec: CommandSpec<O>,
  argv: readonly string[],
): Parsed<O> {
  const options = optionsOf(spec);
  // A lenient pass first: `kubeglue run --help` shows the help even without the tool id or with a typo.
  const { tokens } = parseArgs({
    args: [...argv],
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  if (tokens.some((token) => token.kind === 'option' && token.name === 'help')) return { help: true };
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: true });
  } catch (error) {
    throw new UsageError(usageProblem(spec, error as ParseArgsError));
  }
  const { values, positionals } = parsed;
  if (positionals.length < spec.positionals.length) {
    throw new UsageError(`missing ${spec.positionals.map((name) => `<${name}>`).join(' ')}`);
  }
  if (positionals.length > spec.positionals.length) {
    throw new UsageError(`unexpected argument '${positionals[spec.positionals.length]}'`);
  }
  const output = values.output ?? 'text';
  if (output !== 'text' && output !== 'json') {
    throw new UsageError(`--output must be text or json, not '${String(output)}'`);
  }
  const args = Object.fromEntries(
    spec.positionals.map((name, index) => [name, positionals[index] as string]),
  );
  return { help: false, values: values as OptionValues<O>, args, output };
}
