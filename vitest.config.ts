import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

/** Newest modification time of the .node files under `dir` (0 when there are none). */
function newestBinary(dir: string): number {
  try {
    const files = readdirSync(dir, { recursive: true }).map(String);
    return Math.max(0, ...files.filter((f) => f.endsWith('.node')).map((f) => statSync(join(dir, f)).mtimeMs));
  } catch {
    return 0;
  }
}

// The tests' binary (`npm run build:test-hooks`: the release source plus the test hooks) is
// loaded instead of the release one (node-gyp-build's KUBENODE_PREBUILD), unless it is missing
// or older than the release binary: a stale one must not hide a rebuilt core. Without it, tests
// that need a hook fail saying which build to run.
const hooks = join(import.meta.dirname, 'build', 'test-hooks');
const hooksBuilt = newestBinary(join(hooks, 'prebuilds'));
const useHooks = hooksBuilt > 0 && hooksBuilt >= newestBinary(join(import.meta.dirname, 'prebuilds'));

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Kills test API servers orphaned by test processes that died by a signal.
    globalSetup: ['test/support/global-setup.ts'],
    // Real kernels and a real API server are slow to set up; keep files apart but allow time.
    testTimeout: 60_000,
    hookTimeout: 600_000,
    pool: 'forks',
    env: useHooks ? { KUBENODE_PREBUILD: hooks } : {},
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: process.env.CI ? { json: '.cache/vitest-report.json' } : undefined,
  },
});
