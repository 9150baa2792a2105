/**
 * The container image, checked without a container engine: the Dockerfile and .dockerignore are parsed,
 * the runtime's import graph must lie inside what the image copies (the compiled dist/), and the image's
 * build is replayed in a temporary directory (`npm run build`'s two commands into a scratch build context,
 * the files the Dockerfile copies, its build stage's RUN lines, its ENV and ENTRYPOINT) to start every
 * role from a production-only install on the pinned Node 24. The image itself runs on a real node in
 * test/e2e/ (uid 65532, read-only root filesystem).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '../../../config/config.ts';
import { callApi, readyUrl, TEST_ADMIN_KEY } from '../../support/embedded.ts';

const REPO = resolve(import.meta.dirname, '../../..');
const ROLE_MAINS = ['bin/embedded-main.ts', 'api/main.ts', 'operator/main.ts', 'runner/main.ts'];
/** Reached only through a dynamic import or a fork: proves the walk follows those too. */
const INDIRECT_MODULES = ['runner/pod-runner.ts', 'engine/worker/worker.ts'];

// ---- Dockerfile ------------------------------------------------------------------------------------

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

interface Stage {
  name: string | undefined;
  from: string;
  instructions: Instruction[];
}

/** Instructions with continuation lines joined; comments and parser directives dropped. */
function parseInstructions(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending = '';
  let start = 0;
  text.split('\n').forEach((raw, index) => {
    const line = raw.replace(/\s+$/, '');
    if (/^\s*#/.test(line) || (!pending && !line.trim())) return;
    if (!pending) start = index + 1;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      return;
    }
    const full = pending + line;
    pending = '';
    const match = /^\s*([A-Za-z]+)\s+([\s\S]*)$/.exec(full);
    if (!match) throw new Error(`Dockerfile line ${start}: cannot parse '${full}'`);
    instructions.push({ keyword: match[1]!.toUpperCase(), args: match[2]!.trim(), line: start });
  });
  return instructions;
}

/** Whitespace-separated words; double quotes group and are removed. */
function words(args: string): string[] {
  return [...args.matchAll(/(?:[^\s"]+|"[^"]*")+/g)].map((m) => m[0].replace(/"/g, ''));
}

/** The exec (JSON) form of ENTRYPOINT/CMD/RUN/COPY, or undefined for the shell form. */
function execForm(args: string): string[] | undefined {
  return args.startsWith('[') ? (JSON.parse(args) as string[]) : undefined;
}

function parseDockerfile(text: string): { stages: Stage[]; globalArgs: Record<string, string> } {
  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const instruction of parseInstructions(text)) {
    if (instruction.keyword === 'FROM') {
      const [image = '', as, name] = words(instruction.args);
      const from = image.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a, b) => globalArgs[a ?? b] ?? '');
      stages.push({ name: as?.toUpperCase() === 'AS' ? name : undefined, from, instructions: [] });
    } else if (stages.length === 0) {
      if (instruction.keyword !== 'ARG')
        throw new Error(`Dockerfile line ${instruction.line}: only ARG before FROM`);
      const [name = '', value = ''] = instruction.args.split(/=(.*)/s);
      globalArgs[name.trim()] = value.trim().replace(/^"|"$/g, '');
    } else {
      stages.at(-1)!.instructions.push(instruction);
    }
  }
  return { stages, globalArgs };
}

function all(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((instruction) => instruction.keyword === keyword);
}

function only(stage: Stage, keyword: string): Instruction {
  const found = all(stage, keyword);
  if (found.length !== 1)
    throw new Error(`Dockerfile: expected one ${keyword} in the stage, found ${found.length}`);
  return found[0]!;
}

function stageEnv(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of all(stage, 'ENV')) {
    const tokens = words(args);
    if (!tokens[0]?.includes('=')) {
      env[tokens[0] ?? ''] = tokens.slice(1).join(' ');
      continue;
    }
    for (const token of tokens) {
      const [key = '', value = ''] = token.split(/=(.*)/s);
      env[key] = value;
    }
  }
  return env;
}

interface Copy {
  from: string | undefined;
  sources: string[];
  dest: string;
}

function copies(stage: Stage): Copy[] {
  return all(stage, 'COPY').map(({ args }) => {
    const tokens = execForm(args) ?? words(args);
    const flags = tokens.filter((token) => token.startsWith('--'));
    const paths = tokens.filter((token) => !token.startsWith('--'));
    const from = flags.find((flag) => flag.startsWith('--from='))?.slice('--from='.length);
    return { from, sources: paths.slice(0, -1), dest: paths.at(-1) ?? '' };
  });
}

// ---- .dockerignore: the subset of its syntax (moby patternmatcher) the file uses ---------------------

interface IgnoreRule {
  pattern: string;
  negate: boolean;
  regex: RegExp;
}

function globRegex(pattern: string): RegExp {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (char === '*' && pattern[i + 1] === '*') {
      i++;
      if (pattern[i + 1] === '/') {
        i++;
        out += '(?:.*/)?';
      } else {
        out += '.*';
      }
    } else if (char === '*') {
      out += '[^/]*';
    } else if (char === '?') {
      out += '[^/]';
    } else {
      out += char.replace(/[.+^${}()|\\]/g, '\\$&');
    }
  }
  return new RegExp(`^${out}$`);
}

function parseDockerignore(text: string): IgnoreRule[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const negate = line.startsWith('!');
      const pattern = posix
        .normalize((negate ? line.slice(1) : line).trim())
        .replace(/^\/+/, '')
        .replace(/\/+$/, '');
      return { pattern, negate, regex: globRegex(pattern) };
    });
}

/** Docker's rule: the last pattern matching the path or one of its parent directories decides. */
function isIgnored(rules: IgnoreRule[], path: string): boolean {
  const parts = path.split('/');
  const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let ignored = false;
  for (const rule of rules) {
    if (candidates.some((candidate) => rule.regex.test(candidate))) ignored = !rule.negate;
  }
  return ignored;
}

/** The files of the build context `base` under `path` (context-relative), as Docker sends them. */
async function contextFiles(rules: IgnoreRule[], path: string, base = REPO): Promise<string[]> {
  const info = await stat(join(base, path));
  if (!info.isDirectory()) return isIgnored(rules, path) ? [] : [path];
  const reIncludedBelow = (dir: string) =>
    rules.some((rule) => rule.negate && rule.pattern.startsWith(`${dir}/`));
  if (isIgnored(rules, path) && !reIncludedBelow(path)) return [];
  const files: string[] = [];
  for (const entry of await readdir(join(base, path), { withFileTypes: true })) {
    files.push(...(await contextFiles(rules, posix.join(path, entry.name), base)));
  }
  return files;
}

// ---- the runtime's import graph ----------------------------------------------------------------------

interface Graph {
  files: Set<string>;
  /** Bare specifiers imported for their values (type-only imports are erased at run time). */
  packages: Map<string, string>;
}

const IMPORT_PATTERNS = [
  // import x from '…', import { a, type B } from '…', export * from '…', import type … from '…'
  /\b(?:import|export)\s+(type\s+)?[^'";]*?\sfrom\s*(['"])([^'"]+)\2/g,
  // side-effect imports
  /^\s*import\s*()(['"])([^'"]+)\2/gm,
  // dynamic imports
  /\bimport\(\s*()(['"])([^'"]+)\2\s*\)/g,
  // files started by path (fork): new URL('../worker.ts', import.meta.url)
  /\bnew URL\(\s*()(['"])(\.{1,2}\/[^'"]+)\2\s*,\s*import\.meta\.url\s*\)/g,
];

async function importGraph(entry: string): Promise<Graph> {
  const graph: Graph = { files: new Set(), packages: new Map() };
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.shift()!;
    if (graph.files.has(file)) continue;
    graph.files.add(file);
    const source = await readFile(join(REPO, file), 'utf8');
    for (const pattern of IMPORT_PATTERNS) {
      for (const match of source.matchAll(pattern)) {
        const typeOnly = Boolean(match[1]);
        const specifier = match[3]!;
        if (specifier.startsWith('.')) {
          const target = posix.normalize(posix.join(posix.dirname(file), specifier));
          expect(existsSync(join(REPO, target)), `${file} imports ${specifier}, which does not exist`).toBe(
            true,
          );
          queue.push(target);
        } else if (!typeOnly && !isBuiltin(specifier)) {
          const name = specifier.startsWith('@')
            ? specifier.split('/').slice(0, 2).join('/')
            : specifier.split('/')[0]!;
          graph.packages.set(name, file);
        }
      }
    }
  }
  return graph;
}

// ---- processes ----------------------------------------------------------------------------------------

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<Finished> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} timed out:\n${stdout}\n${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/** Every file under dir with its size and modification time, to prove nothing there was written. */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const result = new Map<string, string>();
  for (const entry of entries) {
    const path = join(entry.parentPath, entry.name);
    const info = await stat(path);
    result.set(relative(dir, path), entry.isDirectory() ? 'dir' : `${info.size}:${info.mtimeMs}`);
  }
  return result;
}

// ---- the checks ---------------------------------------------------------------------------------------

const dockerfile = parseDockerfile(await readFile(join(REPO, 'Dockerfile'), 'utf8'));
const ignoreRules = parseDockerignore(await readFile(join(REPO, '.dockerignore'), 'utf8'));
const packageJson = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as {
  license: string;
  version: string;
  dependencies: Record<string, string>;
  scripts: Record<string, string>;
};
const buildConfig = JSON.parse(await readFile(join(REPO, 'tsconfig.build.json'), 'utf8')) as {
  include: string[];
  compilerOptions: { outDir: string };
};
/** What `npm run build` makes, and the Dockerfile copies from the build context (not in the checkout). */
const BUILD_OUTPUT = buildConfig.compilerOptions.outDir;
const lockfile = JSON.parse(await readFile(join(REPO, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; dev?: boolean }>;
};
const finalStage = dockerfile.stages.at(-1)!;
const buildStages = dockerfile.stages.slice(0, -1);
const imageEnv = stageEnv(finalStage);
const workdir = only(finalStage, 'WORKDIR').args;
const entrypoint = execForm(only(finalStage, 'ENTRYPOINT').args);

/** Context-relative files the final image gets from the build context `base`, by their path in the image. */
async function imageContextFiles(base: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const copy of copies(finalStage).filter((c) => c.from === undefined)) {
    for (const source of copy.sources) {
      for (const file of await contextFiles(ignoreRules, source, base)) {
        const inside = relative(source, file);
        const dest = posix.resolve(workdir, copy.dest);
        const target =
          inside === ''
            ? copy.dest.endsWith('/')
              ? posix.join(dest, posix.basename(file))
              : dest
            : posix.join(dest, inside);
        files.set(file, target);
      }
    }
  }
  return files;
}

describe('Dockerfile', () => {
  it('builds on the official Node 24 slim image, at the Node version the tests run on', () => {
    const pinned = lockfile.packages['node_modules/node']?.version;
    for (const stage of dockerfile.stages) {
      const match = /^node:(24\.\d+\.\d+)-bookworm-slim(@sha256:[0-9a-f]{64})?$/.exec(stage.from);
      expect(match, `FROM ${stage.from}`).not.toBeNull();
      expect(match?.[1]).toBe(pinned);
    }
    expect(process.versions.node).toBe(pinned);
  });

  it('runs as a numeric non-root user, with an exec-form entrypoint to the kubeglue CLI', () => {
    const [user = '', group] = only(finalStage, 'USER').args.split(':');
    expect(user).toMatch(/^\d+$/);
    expect(Number(user)).toBeGreaterThan(0);
    if (group !== undefined) {
      expect(group).toMatch(/^\d+$/);
      expect(Number(group)).toBeGreaterThan(0);
    }
    expect(workdir).toBe('/app');
    expect(entrypoint?.[0]).toBe('node');
    // The compiled CLI (npm run build), not the TypeScript sources.
    expect(entrypoint?.at(-1)).toBe(`${workdir}/${BUILD_OUTPUT}/bin/kubeglue.js`);
    expect(entrypoint).toContain('--no-node-snapshot');
  });

  it('sets the environment isolated-vm and a read-only root filesystem need', () => {
    expect(imageEnv.NODE_OPTIONS?.split(/\s+/)).toContain('--no-node-snapshot');
    // Node 24 accepts the flag in NODE_OPTIONS (it refuses to start on a flag it does not allow there).
    expect(process.allowedNodeEnvironmentFlags.has('--no-node-snapshot')).toBe(true);
    expect(imageEnv.NODE_ENV).toBe('production');
    expect(imageEnv.NODE_COMPILE_CACHE).toBeUndefined();
    expect(imageEnv.NODE_DISABLE_COMPILE_CACHE).toBe('1');
    for (const name of ['HOME', 'KUBEGLUE_DATA_DIR']) expect(imageEnv[name]).toMatch(/^\/tmp(\/|$)/);
    // The image's settings are valid for the roles, and listen on every interface of the container.
    expect(loadSettings('api', imageEnv).host).toBe('0.0.0.0');
    const embedded = loadSettings('embedded', imageEnv);
    expect(embedded.host).toBe('0.0.0.0');
    expect(embedded.dataDir.startsWith('/tmp/')).toBe(true);
  });

  it('exposes the default ports of the roles', () => {
    const exposed = all(finalStage, 'EXPOSE').flatMap(({ args }) => words(args).map((port) => Number(port)));
    const byNumber = (a: number, b: number) => a - b;
    expect(exposed.sort(byNumber)).toEqual(
      [
        loadSettings('embedded', {}).port,
        loadSettings('api', {}).internalPort,
        loadSettings('operator', {}).metricsPort,
      ].sort(byNumber),
    );
  });

  it('carries the OCI labels', () => {
    const labels = Object.fromEntries(
      all(finalStage, 'LABEL').flatMap(({ args }) => words(args).map((token) => token.split(/=(.*)/s))),
    ) as Record<string, string>;
    for (const key of ['title', 'description', 'licenses', 'version', 'revision', 'source', 'created']) {
      expect(labels[`org.opencontainers.image.${key}`], key).toBeTruthy();
    }
    expect(labels['org.opencontainers.image.licenses']).toBe(packageJson.license);
    // The version label's default follows package.json (the operator's default runner image tag does too).
    const version = all(finalStage, 'ARG').find(({ args }) => args.startsWith('VERSION='));
    expect(version?.args).toBe(`VERSION=${packageJson.version}`);
  });

  it('installs production dependencies only, honouring allowScripts, and runs nothing in the final stage', () => {
    const installsOf = (stage: Stage | undefined) =>
      (stage ? all(stage, 'RUN') : []).filter((r) => /\bnpm\s+ci\b/.test(r.args)).map((r) => words(r.args));
    const [runtime, ...more] = installsOf(dockerfile.stages.find((stage) => stage.name === 'build'));
    expect(more).toEqual([]);
    expect(runtime).toContain('--omit=dev');
    // The final stage copies the production modules and the compiled build (with the dashboard), nothing else.
    expect(copies(finalStage).map(({ from, sources }) => ({ from, sources }))).toEqual([
      { from: undefined, sources: ['package.json'] },
      { from: 'build', sources: [`${workdir}/node_modules`] },
      { from: undefined, sources: [BUILD_OUTPUT] },
    ]);
    // npm run build = the compiler with tsconfig.build.json, then the dashboard's bundle into dist/ui.
    expect(packageJson.scripts.build).toBe('tsc -p tsconfig.build.json && node ui/build.ts');
    for (const flags of buildStages.flatMap(installsOf)) {
      expect(flags).toContain('--strict-allow-scripts');
      expect(flags).not.toContain('--ignore-scripts');
      expect(flags).not.toContain('--dangerously-allow-all-scripts');
    }
    expect(all(finalStage, 'RUN')).toEqual([]);
    // No package manager, shell or install at run time: the entrypoint is node itself.
    expect(all(finalStage, 'CMD').every(({ args }) => execForm(args) !== undefined)).toBe(true);
  });
});

describe('build context', () => {
  it('holds every path the Dockerfile copies', async () => {
    for (const stage of dockerfile.stages) {
      for (const copy of copies(stage).filter((c) => c.from === undefined)) {
        for (const source of copy.sources.filter((path) => path !== BUILD_OUTPUT)) {
          expect(existsSync(join(REPO, source)), `COPY ${source}: missing from the checkout`).toBe(true);
          expect(
            await contextFiles(ignoreRules, source),
            `COPY ${source}: excluded by .dockerignore`,
          ).not.toEqual([]);
        }
      }
      for (const copy of copies(stage).filter((c) => c.from !== undefined)) {
        expect(dockerfile.stages.some((s) => s.name === copy.from)).toBe(true);
      }
    }
    expect(ignoreRules.every((rule) => !/[[\]\\]/.test(rule.pattern))).toBe(true);
  });

  it('keeps tests, benchmarks, the chart, docs, data dirs and installed modules out', () => {
    for (const path of [
      '.git/HEAD',
      'node_modules/zod/package.json',
      'test/integration/build/image.test.ts',
      'bench/main.ts',
      'charts/kubeglue/Chart.yaml',
      'deploy/kind.yaml',
      'examples/tool.yaml',
      'agent/README.md',
      'README.md',
      'Dockerfile',
      '.kubeglue/master.key',
      'bin/.kubeglue/master.key',
      'engine/sandbox/README.md',
      'runner/node_modules/x/index.js',
      'bin/kubeglue.ts',
      'engine/worker/worker.ts',
      'dist/contract/generate.js',
      'dist/api/server.test.js',
      'dist/bin/prepare.js',
      'dist/.tsbuildinfo',
      'dist/.build-inputs.json',
    ]) {
      expect(isIgnored(ignoreRules, path), path).toBe(true);
    }
    for (const path of [
      'package.json',
      'package-lock.json',
      'dist/bin/kubeglue.js',
      'dist/engine/worker/worker.js',
      'dist/ui/index.html',
    ]) {
      expect(isIgnored(ignoreRules, path), path).toBe(false);
    }
  });

  it('contains every module the runtime imports; no import reaches tests, benchmarks or dev dependencies', async () => {
    const graph = await importGraph('bin/kubeglue.ts');
    for (const file of [...ROLE_MAINS, ...INDIRECT_MODULES]) expect(graph.files.has(file), file).toBe(true);
    for (const file of graph.files) {
      // Compiled by npm run build into dist/ (its folder is in tsconfig.build.json), and copied from there.
      expect(buildConfig.include, `${file}: its folder is not compiled`).toContain(file.split('/')[0]);
      const compiled = posix.join(BUILD_OUTPUT, file.replace(/\.ts$/, '.js'));
      expect(isIgnored(ignoreRules, compiled), `${compiled} is left out of the image`).toBe(false);
      expect(file).not.toMatch(/^(test|bench|charts|deploy|examples)\//);
    }
    for (const [name, importer] of graph.packages) {
      expect(
        packageJson.dependencies[name],
        `${importer} imports '${name}', not a production dependency`,
      ).toBeDefined();
    }
  });
});

describe('the roles from a production-only install', () => {
  let root: string;
  let app: string;
  let roleEnv: NodeJS.ProcessEnv;
  let before: Map<string, string>;
  const children: ChildProcess[] = [];

  /** The Dockerfile's ENTRYPOINT with the pinned node binary and the temporary /app. */
  const command = (role: string, args: string[] = []): [string, string[]] => {
    const [node = '', ...rest] = entrypoint ?? [];
    expect(node).toBe('node');
    const mapped = rest.map((arg) =>
      arg.startsWith(`${workdir}/`) ? join(app, arg.slice(workdir.length)) : arg,
    );
    return [process.execPath, [...mapped, role, ...args]];
  };
  const runRole = (role: string, args: string[] = [], env: NodeJS.ProcessEnv = {}) => {
    const [bin, argv] = command(role, args);
    return run(bin, argv, { cwd: app, env: { ...roleEnv, ...env } });
  };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'kubeglue-image-'));
    app = join(root, 'app');
    const tmp = join(root, 'tmp');
    await mkdir(tmp, { recursive: true });
    const nodeDir = dirname(process.execPath);

    // The build context: the manifests, and `npm run build`'s output made here (its two commands with a
    // scratch outDir, so the checkout's dist/ is neither needed nor touched).
    const context = join(root, 'context');
    await mkdir(context);
    for (const file of ['package.json', 'package-lock.json']) await cp(join(REPO, file), join(context, file));
    const tsc = join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
    const out = join(context, BUILD_OUTPUT);
    const compiled = await run(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', out], {
      cwd: REPO,
      env: process.env,
      timeoutMs: 240_000,
    });
    expect(compiled.code, compiled.stdout + compiled.stderr).toBe(0);
    const ui = await run(process.execPath, ['ui/build.ts', join(out, 'ui')], {
      cwd: REPO,
      env: process.env,
      timeoutMs: 120_000,
    });
    expect(ui.code, ui.stdout + ui.stderr).toBe(0);

    // Each build stage (the runtime's dependencies, the dashboard): its context COPYs into a directory,
    // then its RUN lines with sh -c as docker does, with the pinned Node 24 first on PATH (npm runs on it).
    // The npm configuration of the machine (registry, CA) applies, but not what an outer `npm run`/`npx`
    // put in the environment.
    expect(buildStages.map((stage) => stage.name)).toEqual(['build']);
    const buildEnv: NodeJS.ProcessEnv = { PATH: `${nodeDir}:${process.env.PATH ?? ''}` };
    for (const [key, value] of Object.entries(process.env)) {
      const kept = !/^(npm_|INIT_CWD$|NODE$|NODE_OPTIONS$)/.test(key);
      const npmConnection =
        /^npm_config_(registry|cafile|ca|proxy|https_proxy|noproxy|strict_ssl|userconfig|cache)$/.test(key);
      if (key !== 'PATH' && (kept || npmConnection)) buildEnv[key] = value;
    }
    buildEnv.npm_config_ignore_scripts = 'false';
    await Promise.all(
      buildStages.map(async (stage) => {
        const dir = join(root, stage.name ?? '');
        await mkdir(dir);
        expect(only(stage, 'WORKDIR').args).toBe(workdir);
        for (const copy of copies(stage)) {
          expect(copy.from).toBeUndefined();
          for (const source of copy.sources) {
            // As docker does: a directory's contents go into dest; a file into dest/ or as dest.
            const directory = (await stat(join(context, source))).isDirectory();
            const into =
              directory || !copy.dest.endsWith('/')
                ? copy.dest
                : posix.join(copy.dest, posix.basename(source));
            await cp(join(context, source), join(dir, into), { recursive: true });
          }
        }
        for (const step of all(stage, 'RUN')) {
          const result = await run('sh', ['-c', step.args], { cwd: dir, env: buildEnv, timeoutMs: 240_000 });
          expect(result.code, `RUN ${step.args}\n${result.stdout}\n${result.stderr}`).toBe(0);
        }
      }),
    );

    // The final stage: the context files it copies, and what it takes from the build stage.
    for (const [file, target] of await imageContextFiles(context)) {
      await cp(join(context, file), join(app, posix.relative(workdir, target)));
    }
    for (const copy of copies(finalStage).filter((c) => c.from !== undefined)) {
      expect(copy.from).toBe('build');
      for (const source of copy.sources) {
        const target = join(app, posix.relative(workdir, posix.resolve(workdir, copy.dest)));
        await mkdir(dirname(target), { recursive: true });
        await rename(join(root, copy.from ?? '', posix.relative(workdir, source)), target);
      }
    }

    // The image's ENV, with /tmp moved into this test's directory.
    roleEnv = { PATH: `${nodeDir}:/usr/local/bin:/usr/bin:/bin`, TMPDIR: tmp };
    for (const [key, value] of Object.entries(imageEnv)) roleEnv[key] = value.replace(/^\/tmp(?=\/|$)/, tmp);
    await mkdir(roleEnv.HOME!, { recursive: true });
    before = await snapshot(app);
  }, 300_000);

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('installed no dev dependency and ran no denied install script', async () => {
    const modules = join(app, 'node_modules');
    const devOnly = Object.entries(lockfile.packages).filter(([path, entry]) => path && entry.dev);
    expect(devOnly.map(([path]) => path)).toContain('node_modules/node');
    for (const [path] of devOnly) expect(existsSync(join(app, path)), path).toBe(false);
    expect(existsSync(join(modules, '.bin/node'))).toBe(false);
    // Denied in allowScripts: no native build happened (the compilers are not needed).
    for (const dir of ['isolated-vm/build', 'cpu-features/build', 'ssh2/lib/protocol/crypto/build']) {
      expect(existsSync(join(modules, dir)), dir).toBe(false);
    }
    const prebuilt = `isolated-vm/prebuilds/linux-${process.arch}/isolated-vm.abi${process.versions.modules}.glibc.node`;
    expect(existsSync(join(modules, prebuilt)), prebuilt).toBe(true);
  });

  it('starts `kubeglue embedded`: ready, a transform runs in isolated-vm, the dashboard is served', async () => {
    const [bin, argv] = command('embedded');
    const child = spawn(bin, argv, {
      cwd: app,
      env: {
        ...roleEnv,
        KUBEGLUE_HOST: '127.0.0.1',
        KUBEGLUE_PORT: '0',
        KUBEGLUE_ADMIN_KEY: TEST_ADMIN_KEY,
        KUBEGLUE_WORKERS: '1',
        KUBEGLUE_SHUTDOWN_GRACE_MS: '2000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const { url, output } = await readyUrl(child);
    const exited = new Promise<number | null>((resolveCode) => child.once('exit', resolveCode));

    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    const call = (path: string, body: unknown) =>
      callApi<Record<string, unknown>>(url, TEST_ADMIN_KEY, 'POST', path, body);
    const tool = await call('/v1/tools', {
      id: 'image-check',
      steps: [{ id: 'answer', config: { type: 'transform', transformCode: '() => ({ answer: 6 * 7 })' } }],
    });
    expect(tool.status, JSON.stringify(tool.body)).toBe(201);
    const result = await call('/v1/tools/image-check/run', {});
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect(result.body).toMatchObject({ status: 'success', data: { answer: 42 } });
    // The dashboard the ui stage built: its page and the script it loads.
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    const script = /<script type="module" src="([^"]+)"/.exec(await page.text())?.[1];
    expect(script).toMatch(/^\/assets\/main-/);
    expect((await fetch(`${url}${script}`)).status).toBe(200);

    child.kill('SIGTERM');
    expect(await exited, output()).toBe(0);
    expect(existsSync(join(roleEnv.KUBEGLUE_DATA_DIR!, 'master.key'))).toBe(true);
  }, 120_000);

  it('runs an order with `kubeglue runner --order`', async () => {
    const order = join(roleEnv.TMPDIR!, 'order.json');
    await writeFile(
      order,
      JSON.stringify({
        runId: 'image-runner',
        tool: {
          id: 'image-runner',
          steps: [
            { id: 'answer', config: { type: 'transform', transformCode: '() => ({ answer: 6 * 7 })' } },
          ],
        },
        traceId: '0af7651916cd43dd8448eb211c80319c',
      }),
    );
    const result = await runRole('runner', ['--order', order]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'success', data: { answer: 42 } });
  }, 60_000);

  it('prints the roles for the default command (CMD)', async () => {
    const cmd = execForm(only(finalStage, 'CMD').args) ?? [];
    const [role = '', ...args] = cmd;
    const result = await runRole(role, args);
    expect(result.code, result.stderr).toBe(0);
    for (const name of ['embedded', 'api', 'operator', 'runner'])
      expect(result.stdout).toContain(`  ${name} `);
  }, 30_000);

  it('loads the api, operator and runner Pod modules, which refuse to start without their settings', async () => {
    for (const role of ['api', 'operator']) {
      const result = await runRole(role);
      expect(result.code, `${role}: ${result.stdout}${result.stderr}`).toBe(1);
      expect(result.stderr).toContain('KUBEGLUE_DATABASE_URL is required');
    }
    // With a run id the runner fetches its order from the API (runner/pod-runner.ts, a dynamic import).
    const pod = await runRole('runner', [], { KUBEGLUE_RUN_ID: 'run-1' });
    expect(pod.code, pod.stdout + pod.stderr).toBe(1);
    expect(pod.stdout + pod.stderr).toMatch(/invalid runner environment: .*KUBEGLUE_INTERNAL_URL/);
  }, 60_000);

  it('wrote nothing under /app (a read-only root filesystem works: only /tmp is written)', async () => {
    const after = await snapshot(app);
    const changed = [...after].filter(([path, info]) => before.get(path) !== info).map(([path]) => path);
    const removed = [...before.keys()].filter((path) => !after.has(path));
    expect({ changed, removed }).toEqual({ changed: [], removed: [] });
  });
});
