/**
 * Preloaded into a child process (`--import`) to record which modules it loads: every module's URL, in
 * load order, is written at exit to the file named by MODULE_TRACE_FILE. Used to prove what a process
 * does not load (test/integration/runner/runner-modules.test.ts).
 */
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const file = process.env.MODULE_TRACE_FILE;
const loaded: string[] = [];

if (file) {
  registerHooks({
    load(url, context, nextLoad) {
      loaded.push(url);
      return nextLoad(url, context);
    },
  });
  process.once('exit', () => writeFileSync(file, `${loaded.join('\n')}\n`));
}
