import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Worker processes and GPU devices are heavy: keep test files from oversubscribing 2 cores.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
