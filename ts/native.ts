// The only module that loads the compiled binding. node-gyp-build picks
// prebuilds/<platform>-<arch>/kubenode[.glibc|.musl].node (or build/Release during development).
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type * as Binding from './binding.js';

const require = createRequire(import.meta.url);
// ts/native.ts and dist/native.js are both one level below the package root.
export const packageRoot = fileURLToPath(new URL('..', import.meta.url));

interface NodeGypBuild {
  (dir: string): unknown;
  resolve(dir: string): string;
}
const nodeGypBuild = require('node-gyp-build') as NodeGypBuild;

export const native = nodeGypBuild(packageRoot) as typeof Binding;

/** Path of the binary that was loaded. */
export function nativePath(): string {
  return nodeGypBuild.resolve(packageRoot);
}
