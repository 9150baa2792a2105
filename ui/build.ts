/**
 * Builds the dashboard (ui/) into dist/ui/: one esbuild bundle of ui/main.tsx and its stylesheet, with
 * content hashes in the file names (served with a year-long immutable cache by api/dashboard.ts), and
 * index.html pointing at them (served with no-cache, so a new build is picked up at once). Nothing is
 * inlined: the Content-Security-Policy allows scripts and styles from the server's own origin only.
 * `npm run build` runs it after tsc; `node ui/build.ts [outDir]` alone.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join, relative, resolve } from 'node:path';
import { build } from 'esbuild';

const UI = import.meta.dirname;
const ROOT = resolve(UI, '..');
export const DEFAULT_UI_OUT_DIR = resolve(UI, '..', 'dist', 'ui');
/**
 * The most JavaScript a first visit may fetch, gzip-compressed, in KiB: `ui.first_load` of `npm run bench`
 * reports against it, and test/unit/ui/bundle.test.ts holds every build to it.
 */
export const FIRST_LOAD_JS_BUDGET_KIB = 200;

export interface UiBuild {
  outDir: string;
  /** index.html's script and stylesheet, as served: `/assets/main-<hash>.js`. */
  script: string;
  stylesheet: string;
  /** Every JavaScript file the first load fetches (the entry and its static imports), as served. */
  firstLoadScripts: string[];
  /** Every source module bundled, relative to the checkout (`ui/main.tsx`, `node_modules/preact/…`). */
  modules: string[];
}

/**
 * Bundles into a fresh directory beside outDir and swaps it in by renames, so a server or a test
 * reading outDir never sees half a build.
 */
export async function buildUi(outDir: string = DEFAULT_UI_OUT_DIR): Promise<UiBuild> {
  const staging = `${outDir}.staging-${process.pid}-${Date.now()}`;
  await mkdir(staging, { recursive: true });
  try {
    const result = await build({
      entryPoints: [join(UI, 'main.tsx')],
      outdir: join(staging, 'assets'),
      entryNames: '[name]-[hash]',
      chunkNames: 'chunk-[hash]',
      assetNames: '[name]-[hash]',
      bundle: true,
      splitting: true,
      format: 'esm',
      minify: true,
      target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
      jsx: 'automatic',
      jsxImportSource: 'preact',
      tsconfig: join(UI, 'tsconfig.json'),
      metafile: true,
      absWorkingDir: ROOT,
      legalComments: 'none',
      logLevel: 'warning',
    });
    const { outputs } = result.metafile;
    const entry = Object.entries(outputs).find(
      ([, output]) => output.entryPoint !== undefined && output.cssBundle,
    );
    if (!entry) throw new Error('ui build: no entry bundle with a stylesheet in the output');
    const asServed = (file: string) => `/assets/${basename(file)}`;
    const script = asServed(entry[0]);
    const stylesheet = asServed(entry[1].cssBundle as string);
    const template = await readFile(join(UI, 'index.html'), 'utf8');
    const html = template.replace('%SCRIPT%', script).replace('%STYLESHEET%', stylesheet);
    if (html.includes('%')) throw new Error('ui build: index.html has a placeholder left');
    await writeFile(join(staging, 'index.html'), html);
    await writeFile(join(staging, 'favicon.svg'), await readFile(join(UI, 'favicon.svg')));
    // Pages loaded with import() are chunks of their own, fetched when first shown.
    const firstLoad = new Set<string>();
    const walk = (file: string) => {
      if (firstLoad.has(file)) return;
      firstLoad.add(file);
      for (const imported of outputs[file]?.imports ?? []) {
        if (imported.kind === 'import-statement' && !imported.external) walk(imported.path);
      }
    };
    walk(entry[0]);
    // Moved aside rather than deleted first: outDir is missing only between two renames, not for as long
    // as a delete of the old tree takes (another test run may start a server reading it just then).
    const aside = `${outDir}.staging-old-${process.pid}-${Date.now()}`;
    await rename(outDir, aside).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
    await rename(staging, outDir);
    await rm(aside, { recursive: true, force: true });
    const modules = Object.keys(result.metafile.inputs).sort();
    return { outDir, script, stylesheet, firstLoadScripts: [...firstLoad].map(asServed), modules };
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

if (import.meta.main) {
  const built = await buildUi(process.argv[2] ? resolve(process.argv[2]) : undefined);
  console.log(`ui: built ${relative(process.cwd(), built.outDir)} (${built.script})`);
}
