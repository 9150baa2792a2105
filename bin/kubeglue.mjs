#!/usr/bin/env -S node --no-node-snapshot
/**
 * `kubeglue` as `npx kubeglue` (package.json#bin) starts it. Plain JavaScript, so that any Node.js can
 * read it and say in one line which Node kubeglue needs, where an older one would stop at the `.ts` file
 * with a stack trace. A checkout runs on the Node its `node` dev dependency pins (`npm ci` installs it into
 * node_modules/.bin, which npx and npm scripts put first on PATH); this line is for a Node found elsewhere,
 * e.g. after `npm ci --ignore-scripts`. Then bin/kubeglue.ts runs as the CLI, with Node's compile cache on.
 */
import { readFileSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { fileURLToPath } from 'node:url';

/** The major version of the Node the checkout pins (package.json#devDependencies.node: `^24.21.0`). */
function pinnedMajor() {
  try {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    return Number(/\d+/.exec(manifest.devDependencies?.node ?? '')?.[0]) || undefined;
  } catch {
    return undefined;
  }
}

const needed = pinnedMajor();
const running = Number(process.versions.node.split('.')[0]);
if (needed !== undefined && running < needed) {
  process.stderr.write(
    `kubeglue needs Node.js ${needed}, and this is Node.js ${process.version}: \`npm ci\` installs ` +
      `Node.js ${needed} into node_modules, and \`npx kubeglue\` runs on it (docs/cli.md#installing)\n`,
  );
  process.exit(1);
}
// From the sources, Node strips the types of ~300 files and compiles them at every start: its compile cache
// keeps both between starts, so a command starts in ~0.5 s instead of ~1.4 s. The cache lives in the
// checkout's node_modules/.cache (the checkout owner's, where a shared temp folder would let another user
// plant compiled code); NODE_COMPILE_CACHE names another folder, NODE_DISABLE_COMPILE_CACHE=1 turns it off.
// Only modules loaded after this call are cached, hence the dynamic import. It never fails a start: a folder
// it cannot write only leaves the cache off. (A namespace import: a Node without it must reach the message.)
const cache = nodeModule.enableCompileCache?.(
  process.env.NODE_COMPILE_CACHE ||
    fileURLToPath(new URL('../node_modules/.cache/kubeglue-compile', import.meta.url)),
);
// The engine workers (and any other Node process it starts) load the same sources: they share the cache.
if (cache?.directory) process.env.NODE_COMPILE_CACHE = cache.directory;
await import('./kubeglue.ts');
