import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts', 'test/support/mariadb-setup.ts'],
    pool: 'forks',
    // isolated-vm needs V8 without the startup snapshot on Node >= 20.
    execArgv: ['--no-node-snapshot'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
