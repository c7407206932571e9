import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Kills test API servers orphaned by test processes that died by a signal.
    globalSetup: ['test/support/global-setup.ts'],
    // Real kernels and a real API server are slow to set up; keep files apart but allow time.
    testTimeout: 60_000,
    hookTimeout: 600_000,
    pool: 'forks',
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: process.env.CI ? { json: '.cache/vitest-report.json' } : undefined,
  },
});
