/**
 * The layout's rules, read from the code itself: each folder's main file opens with a paragraph that ends
 * in `May import: <folders>.`; every import of the folder's files must stay inside those folders (and the
 * folder itself). A folder's internals are reached only through its public file where it has one: store/
 * through store/index.ts, kube/resources/ through kube/resources/index.ts, runs/execution/ through
 * runs/execution/index.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..', '..', '..');

/** Each folder and the file whose header states its rule. */
const MAIN_FILES: Record<string, string> = {
  contract: 'contract/api/routes.ts',
  config: 'config/config.ts',
  engine: 'engine/run-tool.ts',
  store: 'store/index.ts',
  kube: 'kube/informer.ts',
  platform: 'platform/supervisor.ts',
  runs: 'runs/service.ts',
  // A folder inside runs/ with a rule of its own: the one execution layer, which only runs/ (the sync path),
  // api/ (the internal API) and operator/ (the pool launcher) may use.
  'runs/execution': 'runs/execution/index.ts',
  tools: 'tools/service.ts',
  systems: 'systems/service.ts',
  schedules: 'schedules/service.ts',
  api: 'api/app.ts',
  operator: 'operator/app.ts',
  runner: 'runner/main.ts',
  agent: 'agent/main.ts',
  bin: 'bin/kubeglue.ts',
  // A folder inside bin/ with a rule of its own: the client commands call an API, never the server's code.
  'bin/cli': 'bin/cli/main.ts',
  ui: 'ui/main.tsx',
};
const FOLDERS = Object.keys(MAIN_FILES);

/** Reached from outside only through this file. */
const PUBLIC_FILES: Record<string, string> = {
  'store/': 'store/index.ts',
  'kube/resources/': 'kube/resources/index.ts',
  'runs/execution/': 'runs/execution/index.ts',
};

function sourceFiles(folder: string): string[] {
  return readdirSync(join(REPO, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.test.ts'))
    .map((entry) => relative(REPO, join(entry.parentPath, entry.name)).split('\\').join('/'));
}

/** The folder of the table a file belongs to: the deepest one holding it (bin/cli/x.ts → bin/cli). */
function folderOf(file: string): string | undefined {
  return FOLDERS.filter((folder) => file.startsWith(`${folder}/`))
    .sort((a, b) => b.length - a.length)
    .at(0);
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function importsOf(file: string): string[] {
  const source = readFileSync(join(REPO, file), 'utf8');
  return [...source.matchAll(IMPORT)].map((m) =>
    posix.normalize(posix.join(posix.dirname(file), (m[1] ?? m[2]) as string)),
  );
}

/** The folders named by the main file's `May import:` line; `every folder` allows all. */
function allowedBy(folder: string): string[] {
  const header = readFileSync(join(REPO, MAIN_FILES[folder] as string), 'utf8').match(
    /^(?:#!.*\n)?\/\*\*[\s\S]*?\*\//,
  );
  // The line may wrap onto the comment's next lines.
  const line = header?.[0].match(/May import: ([^.]*)\./)?.[1]?.replace(/\n\s*\*\s*/g, ' ');
  if (line === undefined) throw new Error(`${MAIN_FILES[folder]} does not open with a "May import:" line`);
  if (line === 'every folder') return FOLDERS;
  return line
    .split(',')
    .map((name) => name.trim())
    .filter((name) => FOLDERS.includes(name));
}

describe('the layout', () => {
  it.each(FOLDERS)('%s/ opens its main file with what it holds and what it may import', (folder) => {
    const header = readFileSync(join(REPO, MAIN_FILES[folder] as string), 'utf8').match(
      /^(?:#!.*\n)?\/\*\*[\s\S]*?\*\//,
    );
    expect(header?.[0]).toMatch(new RegExp(`^(?:#!.*\\n)?/\\*\\*\\n \\* ${folder}/: `));
    expect(header?.[0]).toMatch(/May import: [^.]+\./);
  });

  it.each(FOLDERS)('%s/ imports only what its header allows', (folder) => {
    const allowed = new Set([folder, ...allowedBy(folder)]);
    const forbidden = sourceFiles(folder).flatMap((file) =>
      importsOf(file)
        .filter((target) => !allowed.has(folderOf(target) ?? (target.split('/')[0] as string)))
        .map((target) => `${file} → ${target}`),
    );
    expect(forbidden).toEqual([]);
  });

  it('reaches store/, kube/resources/ and runs/execution/ only through their public files', () => {
    const reaching = FOLDERS.flatMap((folder) => sourceFiles(folder)).flatMap((file) =>
      importsOf(file).flatMap((target) =>
        Object.entries(PUBLIC_FILES)
          .filter(
            ([inside, entry]) => target.startsWith(inside) && !file.startsWith(inside) && target !== entry,
          )
          .map(() => `${file} → ${target}`),
      ),
    );
    expect(reaching).toEqual([]);
  });

  it('has every folder of the tree in the table, and nothing else at the top beside tests and tooling', () => {
    // bench/: the benchmarks; examples/: the example target the documentation's examples call; test/.
    const top = readdirSync(REPO, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== 'node_modules')
      .map((entry) => entry.name)
      .filter((name) =>
        readdirSync(join(REPO, name), { recursive: true }).some((f) => String(f).endsWith('.ts')),
      );
    expect(top.filter((name) => !FOLDERS.includes(name)).sort()).toEqual(['bench', 'examples', 'test']);
  });

  it('builds, typechecks and ships every source folder: tsconfig.build.json, tsconfig.json, the Dockerfile', () => {
    // ui/ is the dashboard, a program of its own: bundled by ui/build.ts and type-checked with ui/tsconfig.json.
    const sources = FOLDERS.filter((folder) => !folder.includes('/') && folder !== 'ui').sort();
    const config = (file: string) =>
      JSON.parse(readFileSync(join(REPO, file), 'utf8')) as {
        include: string[];
        compilerOptions?: { outDir?: string };
      };
    expect(sources.filter((folder) => !config('tsconfig.build.json').include.includes(folder))).toEqual([]);
    expect(sources.filter((folder) => !config('tsconfig.json').include.includes(folder))).toEqual([]);
    // The image ships what npm run build compiles them to (and the dashboard's bundle) in dist/.
    const outDir = config('tsconfig.build.json').compilerOptions?.outDir;
    expect(outDir).toBe('dist');
    expect(readFileSync(join(REPO, 'Dockerfile'), 'utf8')).toMatch(/^COPY dist \.\/dist$/m);
    expect(readFileSync(join(REPO, '.dockerignore'), 'utf8')).toMatch(/^!dist$/m);
    const { scripts } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(scripts.build).toContain('tsc -p tsconfig.build.json');
    expect(scripts.build).toContain('node ui/build.ts');
    expect(scripts.typecheck).toContain('tsc -p ui/tsconfig.json');
  });
});
