import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // After the default reporter: which suites skip here and why, before the run and in the summary.
    reporters: ['default', './test/support/skip-report.ts'],
    pool: 'forks',
    // isolated-vm needs V8 without the startup snapshot on Node >= 20.
    execArgv: ['--no-node-snapshot'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
