// The only module that loads the compiled binding. node-gyp-build picks
// prebuilds/<platform>-<arch>/kubenode[.glibc|.musl].node (or build/Release during development).
// The binary loads on first use, not at import: without a matching binary the package still
// imports (so `kubenode doctor` can say "binding: missing") and each call into the core throws a
// KubenodeError with code ERR_KUBENODE_BINDING_MISSING.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Binding from './binding.js';
import { KubenodeError } from './errors.js';
import { fs } from './node-builtins.js';

const require = createRequire(import.meta.url);

/** The nearest directory above this module that holds a package.json. */
function findPackageRoot(): string {
  // Searched, not fixed: this module runs as ts/native.ts, dist/native.js and inside the
  // daemons' bundles in dist/cli/ (scripts/bundle-daemons.mjs), each at its own depth.
  const here = dirname(fileURLToPath(import.meta.url));
  for (let dir = here; ; dir = dirname(dir)) {
    if (fs.existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return dirname(here);
  }
}
export const packageRoot = findPackageRoot();

interface NodeGypBuild {
  (dir: string): unknown;
  resolve(dir: string): string;
}
const nodeGypBuild = require('node-gyp-build') as NodeGypBuild;

type NativeBinding = typeof Binding;
let loaded: NativeBinding | undefined;
let failure: KubenodeError | undefined;

function missing(e: unknown): KubenodeError {
  const platform = `${process.platform}-${process.arch}`;
  return new KubenodeError(
    'ERR_KUBENODE_BINDING_MISSING',
    `no kubenode binary for ${platform} (Node ${process.version}) under ${packageRoot}: ${(e as Error)?.message ?? String(e)}`,
    { cause: e },
  );
}

/** Loads the binding once; throws the same typed error on every call when there is none. */
export function loadNative(): NativeBinding {
  if (loaded) return loaded;
  if (failure) throw failure;
  try {
    loaded = nodeGypBuild(packageRoot) as NativeBinding;
    return loaded;
  } catch (e) {
    failure = missing(e);
    throw failure;
  }
}

/** The binding; its members resolve on first access (module-level, never per object call). */
export const native: NativeBinding = new Proxy({} as NativeBinding, {
  get: (_t, key) => loadNative()[key as keyof NativeBinding],
  has: (_t, key) => key in loadNative(),
  ownKeys: () => Reflect.ownKeys(loadNative()),
  getOwnPropertyDescriptor: (_t, key) => {
    const d = Reflect.getOwnPropertyDescriptor(loadNative(), key);
    // The proxy target is a plain extensible object, so report the members as configurable.
    return d ? { ...d, configurable: true } : undefined;
  },
});

/** Path of the binary that is (or would be) loaded; throws when there is none. */
export function nativePath(): string {
  try {
    return nodeGypBuild.resolve(packageRoot);
  } catch (e) {
    throw missing(e);
  }
}
