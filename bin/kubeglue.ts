#!/usr/bin/env -S node --no-node-snapshot
/**
 * bin/: the CLI that starts a role (or talks to an API); the embedded deployment wires api and operator in
 * one process.
 *
 * May import: every folder.
 *
 * `kubeglue <role> [options]` starts one role per process (bin/roles.ts); the role's module is loaded
 * only when chosen, so a runner Pod never loads the API server and the reverse; the client commands and
 * the help texts load only when asked for, so a role never loads them. Before the role starts,
 * every KUBEGLUE_* variable no setting declares is reported (config/config.ts, unknownSettings). A role
 * logs JSON lines from its first line on (contract/log.ts): the warnings before it starts, Node's process
 * warnings and the error that ends it too.
 * `kubeglue <command> [options]` runs a client command against an API (bin/cli/). `--help` of anything
 * only prints: it loads no role, opens no port, creates no file. `npx kubeglue` starts this file through
 * kubeglue.mjs, which first checks that the Node running it is the one kubeglue needs.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { unknownSettings } from '../config/config.ts';
import { suggestKey } from '../contract/format-issues.ts';
import { createLogger, type Logger, logProcessWarnings } from '../contract/log.ts';
import { printable } from './cli/output.ts';
import { findRole, ROLES } from './roles.ts';

const HELP_FLAGS = new Set(['--help', '-h']);

/** The version of the package this file belongs to (from the checkout, the image or dist/). */
function packageVersion(): string {
  for (let dir = import.meta.dirname; ; dir = dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (manifest.name === 'kubeglue' && manifest.version) return manifest.version;
    } catch {
      // not here: look one folder up
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}

/** The logger of the role this process runs, once it is known to start one; its fatal errors go there. */
let roleLog: Logger | undefined;

/** The exit code, or undefined for a role, which sets its own. */
async function main(argv: string[]): Promise<number | undefined> {
  const [name, ...args] = argv;
  if (name === undefined || HELP_FLAGS.has(name)) {
    (name === undefined ? process.stderr : process.stdout).write((await import('./help.ts')).mainHelp());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(`kubeglue ${packageVersion()}\n`);
    return 0;
  }
  const role = findRole(name);
  if (role) {
    if (args.some((arg) => HELP_FLAGS.has(arg))) {
      process.stdout.write((await import('./help.ts')).roleHelp(role));
      return 0;
    }
    roleLog = createLogger(role.name);
    logProcessWarnings(roleLog);
    if (!role.takesArguments && args.length > 0) {
      roleLog.fatal(
        `unknown argument '${args[0]}': settings are KUBEGLUE_* environment variables ` +
          `(see 'kubeglue ${name} --help')`,
      );
      return 2;
    }
    for (const warning of unknownSettings()) roleLog.warn(warning);
    await (await role.load()).main(args);
    return undefined;
  }
  // The client commands (and what they import: the API's route client, YAML) load only for a command: a
  // role, a runner Pod above all, starts without them (test/integration/runner/runner-modules.test.ts).
  const { COMMANDS, findCommand, resolveConnection, runCommand } = await import('./cli/main.ts');
  const spec = findCommand(name);
  if (spec) {
    if (!args.some((arg) => HELP_FLAGS.has(arg))) {
      for (const warning of unknownSettings()) {
        console.error(`kubeglue ${name}: warning: ${printable(warning)}`);
      }
    }
    const interrupt = new AbortController();
    process.once('SIGINT', () => interrupt.abort());
    return runCommand(spec, args, {
      stdout: process.stdout,
      stderr: process.stderr,
      connect: () => resolveConnection(process.env),
      signal: interrupt.signal,
      version: packageVersion(),
      // Loaded only when a command asks: the engine and its sandbox are no part of the other commands.
      offlineTests: async (tool) => (await import('./offline-tests.ts')).runTestsOffline(tool),
    });
  }
  const closest = suggestKey(
    name,
    [...ROLES, ...COMMANDS].map((one) => one.name),
  );
  process.stderr.write(
    `kubeglue: unknown role or command '${printable(name)}'${closest ? ` (did you mean '${closest}'?)` : ''}\n` +
      "(see 'kubeglue --help')\n",
  );
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (error: unknown) => {
    const message = (error as Error).message;
    if (roleLog) roleLog.fatal(message);
    else console.error(printable(`kubeglue ${process.argv[2]}: ${message}`));
    process.exit(1);
  },
);
