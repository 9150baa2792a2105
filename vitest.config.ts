import { defineConfig } from 'vitest/config';
import { COMPILE_CACHE_DIR } from './test/support/cli.ts';

// Node's compile cache for every process of the run, set here so that the test workers get it from their
// start: each test file's worker loads vitest, fastify, zod… again, and each engine worker, server and
// CLI the tests start strips and compiles ~300 source files again; the cache is the one bin/kubeglue.mjs
// gives a user's CLI.
process.env.NODE_COMPILE_CACHE ??= COMPILE_CACHE_DIR;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts', 'test/support/mariadb-setup.ts'],
    // After the default reporter: which suites skip here and why, before the run and in the summary.
    reporters: ['default', './test/support/skip-report.ts'],
    pool: 'forks',
    // isolated-vm needs V8 without the startup snapshot on Node >= 20.
    execArgv: ['--no-node-snapshot'],
    // Ceilings for a loaded 2-core CI machine, not expected times: a passing test takes what it takes.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // A poll waits for something to become true, never for a time: its default of 1 s failed dashboard and
    // overview tests on a loaded machine (load 20+) where the condition came true a little later.
    expect: { poll: { timeout: 15_000 } },
  },
});
