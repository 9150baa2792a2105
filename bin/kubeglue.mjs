#!/usr/bin/env -S node --no-node-snapshot
/**
 * `kubeglue` as `npx kubeglue` (package.json#bin) starts it. Plain JavaScript, so that any Node.js can
 * read it and say in one line which Node kubeglue needs, where an older one would stop at the `.ts` file
 * with a stack trace. A checkout runs on the Node its `node` dev dependency pins (`npm ci` installs it into
 * node_modules/.bin, which npx and npm scripts put first on PATH); this line is for a Node found elsewhere,
 * e.g. after `npm ci --ignore-scripts`. Then bin/kubeglue.ts runs as the CLI.
 */
import { readFileSync } from 'node:fs';

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
await import('./kubeglue.ts');
