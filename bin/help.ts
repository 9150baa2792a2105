/**
 * What `kubeglue --help` and `kubeglue <role> --help` print. A role's settings are listed from the
 * settings registry (config/), so its help cannot drift from docs/configuration.md; docs/cli.md shows
 * `kubeglue --help` and each command's help (test/unit/cli/help.test.ts keeps them equal).
 */
import { type Role, SETTINGS, type Setting, settingsOfRole } from '../config/config.ts';
import { COMMANDS } from './cli/main.ts';
import { ROLES, type RoleSpec } from './roles.ts';

function column(entries: ReadonlyArray<{ name: string; summary: string }>): string[] {
  return entries.map((entry) => `  ${entry.name.padEnd(10)} ${entry.summary}`);
}

/** `kubeglue --help`. */
export function mainHelp(): string {
  return [
    'usage: kubeglue <role> [options]      start a kubeglue process',
    '       kubeglue <command> [options]   call a kubeglue API',
    '       kubeglue --help | --version',
    '',
    'roles:',
    ...column(ROLES),
    '',
    'commands:',
    ...column(COMMANDS),
    '',
    '`kubeglue <role or command> --help` describes each. Roles read their settings from KUBEGLUE_*',
    `environment variables (docs/configuration.md). Commands call the API at ${SETTINGS.tree.cli.url.name} with`,
    `${SETTINGS.tree.cli.apiKey.name}, or as the config file says (docs/cli.md); they exit 0 on success, 1 on a failed`,
    'run or an API error, 2 on a usage or configuration error.',
    '',
  ].join('\n');
}

/** The first clause of a setting's documentation, at most this long: the page has the rest. */
const DOC_WIDTH = 64;
/** Where the documentation column starts; a longer variable puts it on a line of its own. */
const DOC_COLUMN = 40;

function shortDoc(doc: string): string {
  const clause = doc.split(/ \(|; |\. /)[0] ?? doc;
  return clause.length > DOC_WIDTH ? `${clause.slice(0, DOC_WIDTH - 1)}…` : clause;
}

/** `KUBEGLUE_PORT=8080`: the variable with its default for the role, as it would be set. */
function assignment(setting: Setting, role: Role): string {
  const fallback = setting.defaultFor(role);
  return fallback === undefined || fallback === '' ? setting.name : `${setting.name}=${fallback}`;
}

/** `kubeglue <role> --help`. */
export function roleHelp(role: RoleSpec): string {
  const sections = settingsOfRole(role.name).map((part) => ({
    title: part.title,
    rows: part.settings.map((one) => [assignment(one, role.name), shortDoc(one.doc)] as const),
  }));
  const settings =
    sections.length === 0
      ? ['settings: none (it reads its configuration file only)']
      : [
          'settings: environment variables, with their defaults; in full: docs/configuration.md',
          ...sections.flatMap((part) => [
            `  ${part.title}`,
            ...part.rows.map(([left, doc]) =>
              left.length < DOC_COLUMN - 4
                ? `    ${left.padEnd(DOC_COLUMN - 4)}${doc}`
                : `    ${left}\n${' '.repeat(DOC_COLUMN)}${doc}`,
            ),
          ]),
        ];
  return [`usage: ${role.usage}`, '', ...role.about, '', ...settings, ''].join('\n');
}
