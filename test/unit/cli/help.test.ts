/**
 * docs/cli.md shows `kubeglue --help` and each command's (and subcommand's) `--help` exactly as the CLI prints them: the
 * help is made from the commands' declarations (bin/cli/), and this test keeps the page equal to it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ALL_COMMANDS, commandHelp } from '../../../bin/cli/main.ts';
import { mainHelp } from '../../../bin/help.ts';

const PAGE = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'cli.md'), 'utf8');

/** The ```text blocks of the page. */
const blocks = [...PAGE.matchAll(/^```text\n([\s\S]*?)\n```$/gm)].map((match) => match[1]);

describe('docs/cli.md', () => {
  it.each([
    ['kubeglue --help', mainHelp()] as const,
    ...ALL_COMMANDS.map((spec) => [`kubeglue ${spec.name} --help`, commandHelp(spec)] as const),
  ])('shows `%s` as the CLI prints it', (_command, help) => {
    expect(blocks).toContain(help.trimEnd());
  });

  it('has a section on every command', () => {
    for (const spec of ALL_COMMANDS) expect(PAGE).toMatch(new RegExp(`^### ${spec.name}$`, 'm'));
  });
});
