#!/usr/bin/env node
// Each daemon's entry in dist/cli/ rewritten as one file holding its modules and commander's:
// a long-running process then keeps one module record and one whitespace-free source instead of
// 67 of each (the reconciler's), which leaves the reconciler about 1.2 MiB smaller at rest on
// Node 24 and starts it sooner (BENCHMARKS.md, "fleet: the daemons as one file each"). The
// bundle stays at the entry's own path, so its relative lookups (package.json,
// build-info.json) still resolve. Packages loaded at run time through createRequire
// (node-gyp-build, prom-client, yaml, @kubernetes/client-node) are left to Node: esbuild does
// not follow a local require().
// Packages imported with import() stay out as well, so they are still read only when used
// (@peculiar/x509, 0.5 MB, builds the controller's self-signed certificate).
// Identifiers are kept, so stack traces still name kubenode's functions.
import { build } from 'esbuild';

/** Bare `import('pkg')` specifiers stay imports, resolved by Node when they run. */
const lazyPackagesOutside = {
  name: 'lazy-packages-outside',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.kind === 'dynamic-import' ? { path: args.path, external: true } : undefined,
    );
  },
};

/**
 * commander requires child_process at load for executable subcommands, which kubenode has none
 * of: the daemons get it on first use instead (0.5 MiB at rest, BENCHMARKS.md "fleet: lean
 * metrics"). commander calls `childProcess.spawn` alone.
 */
const childProcessOnUse = {
  name: 'child-process-on-use',
  setup(b) {
    b.onResolve({ filter: /^node:child_process$/ }, (args) =>
      /[\\/]commander[\\/]/.test(args.importer) ? { path: 'child_process', namespace: 'on-use' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'on-use' }, () => ({
      contents: "module.exports = { get spawn() { return require('node:child_process').spawn; } };",
      loader: 'js',
    }));
  },
};

const entries = ['dist/cli/main-conntrack.js', 'dist/cli/main-servicecidr-controller.js'];

for (const entry of entries) {
  await build({
    entryPoints: [entry],
    outfile: entry,
    allowOverwrite: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'inline',
    // commander is CommonJS: its require() of Node's builtins needs a real require in an ES module.
    banner: {
      js: "import { createRequire as kubenodeCreateRequire } from 'node:module';\nconst require = kubenodeCreateRequire(import.meta.url);",
    },
    plugins: [lazyPackagesOutside, childProcessOnUse],
    logLevel: 'warning',
  });
}
