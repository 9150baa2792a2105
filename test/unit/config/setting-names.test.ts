/**
 * A setting's name is written once, in config/ (issue 31): code reads settings through config/ and a message
 * that names a setting takes the name from the registry (`SETTINGS.tree.….name`). Where the registry cannot
 * be reached, because the folder may import only contract/ (contract/, engine/, store/, ui/: the import
 * graph test holds them to it), or in prose (docs, comments), a name is text; then it must name a setting
 * of the registry, so that renaming a setting fails here until every mention follows.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../../config/config.ts';

const REPO = join(import.meta.dirname, '..', '..', '..');

/** The folders whose code may import only contract/, so that a name in them is text. */
const WITHOUT_REGISTRY = ['contract', 'engine', 'store', 'ui'];

/** Names that are no setting, and what they are. */
const NOT_SETTINGS: Record<string, string> = {
  KUBEGLUE_KIND_SPECS: "a constant of kube/resources/ (kubeglue's kinds)",
  KUBEGLUE_SRC: "a variable of ../shared/kube-node's images.sh, which the real node's preparation sets",
  KUBEGLUE_BIN: "a constant of the tests: bin/kubeglue.mjs's path",
  KUBEGLUE_AUTH: "docs/mcp.md's example: a variable of an MCP client's own configuration",
};

const NAME = /KUBEGLUE_[A-Z0-9_]*\*?/g;

function filesUnder(folder: string, pattern: RegExp): string[] {
  const root = join(REPO, folder);
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && pattern.test(entry.name))
    .map((entry) => relative(REPO, join(entry.parentPath, entry.name)).split('\\').join('/'));
}

/** The top folders holding TypeScript that ships or runs beside it: every one but config/ and test/. */
function codeFolders(): string[] {
  return readdirSync(REPO, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'))
    .map((entry) => entry.name)
    .filter((name) => !['node_modules', 'dist', 'test', 'config'].includes(name))
    .filter((name) => filesUnder(name, /\.tsx?$/).length > 0);
}

/** The code without its comments: block comments and line comments that start a line or follow a space. */
function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/[^\n]*/g, '$1');
}

function namesIn(text: string): string[] {
  return [...text.matchAll(NAME)].map((match) => match[0]);
}

/** A setting's name, a family of them (`KUBEGLUE_EGRESS_*`), or a name listed in NOT_SETTINGS. */
function known(name: string): boolean {
  // The prefix alone: every variable of the family (unknown ones are reported at start).
  if (name in NOT_SETTINGS || name === 'KUBEGLUE_') return true;
  if (name.endsWith('*')) {
    const prefix = name.slice(0, -1);
    return [...SETTINGS.byName.keys()].some((setting) => setting.startsWith(prefix));
  }
  return SETTINGS.byName.has(name);
}

describe("a setting's name", () => {
  it('is read from the environment only in config/', () => {
    const files = [
      ...codeFolders().flatMap((folder) => filesUnder(folder, /\.tsx?$/)),
      ...filesUnder('test/support', /\.ts$/),
    ];
    const reads = files.flatMap((file) =>
      [
        ...withoutComments(readFileSync(join(REPO, file), 'utf8')).matchAll(
          /\benv(?:\.|\[\s*['"`])KUBEGLUE_\w+/g,
        ),
      ].map((match) => `${file}: ${match[0]}`),
    );
    expect(reads).toEqual([]);
  });

  it('is taken from the registry by the code of every folder that may import config/', () => {
    const written = codeFolders()
      .filter((folder) => !WITHOUT_REGISTRY.includes(folder) && folder !== 'bench')
      .flatMap((folder) => filesUnder(folder, /\.tsx?$/))
      .flatMap((file) =>
        namesIn(withoutComments(readFileSync(join(REPO, file), 'utf8')))
          // `KUBEGLUE_*`: the family of variables, which no single setting is.
          .filter((name) => name !== 'KUBEGLUE_*' && !(name in NOT_SETTINGS))
          .map((name) => `${file}: ${name}`),
      );
    expect(written).toEqual([]);
  });

  it('names a setting of the registry wherever it is written as text: code, comments, docs, the chart', () => {
    const files = [
      ...codeFolders().flatMap((folder) => filesUnder(folder, /\.(tsx?|mjs|md)$/)),
      ...filesUnder('docs', /\.md$/).filter((file) => file !== 'docs/configuration.md'),
      ...filesUnder('charts', /\.(ya?ml|tpl|md|json)$/),
      ...filesUnder('deploy', /\.ya?ml$/),
      ...filesUnder('test/support', /\.(ts|sh)$/),
      'README.md',
      'Dockerfile',
      'test/setup.sh',
      '.ci/run',
    ];
    const unknown = files.flatMap((file) =>
      namesIn(readFileSync(join(REPO, file), 'utf8'))
        .filter((name) => !known(name))
        .map((name) => `${file}: ${name}`),
    );
    expect([...new Set(unknown)]).toEqual([]);
  });
});
