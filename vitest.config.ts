import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts', 'test/support/mariadb-setup.ts'],
    // After the default reporter: which suites skip here and why, before the run and in the summary.
    reporters: ['default', './test/support/skip-report.ts'],
    pool: 'forks',
    // isolated-vm needs V8 without the startup snapshot on Node >= 20.
    execArgv: ['--no-node-snapshot'],
    // The Node processes the tests start from the sources (engine workers, servers, the CLI) share the
    // compile cache that bin/kubeglue.mjs gives a user's: each would strip and compile ~300 files again.
    env: { NODE_COMPILE_CACHE: join(import.meta.dirname, 'node_modules/.cache/kubeglue-compile') },
    // Ceilings for a loaded 2-core CI machine, not expected times: a passing test takes what it takes.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // A poll waits for something to become true, never for a time: its default of 1 s failed dashboard and
    // overview tests on a loaded machine (load 20+) where the condition came true a little later.
    expect: { poll: { timeout: 15_000 } },
  },
});
