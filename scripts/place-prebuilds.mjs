#!/usr/bin/env node
// Renames napi-rs artifacts (kubenode.<platform>-<arch>[-abi].node) to the names node-gyp-build
// resolves: prebuilds/<platform>-<arch>/kubenode[.glibc|.musl].node. A napi-rs file name copied
// unchanged would carry no libc tag and load even under musl, so the tag matters.
//   node scripts/place-prebuilds.mjs <dir-with-artifacts> [prebuilds-dir]
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ABI_TAG = { gnu: '.glibc', musl: '.musl', msvc: '', '': '' };

export function prebuildName(file) {
  const m = /^kubenode\.([a-z0-9]+)-([a-z0-9]+)(?:-(gnu|musl|msvc|gnueabihf))?\.node$/.exec(basename(file));
  if (!m) {
    throw new Error(`not a napi-rs artifact name: ${basename(file)}`);
  }
  const [, platform, arch, abi = ''] = m;
  const tag = abi === 'gnueabihf' ? '.glibc.armv7' : ABI_TAG[abi];
  return join(`${platform}-${arch}`, `kubenode${tag}.node`);
}

export function placePrebuild(file, prebuildsDir) {
  const rel = prebuildName(file);
  const dest = join(prebuildsDir, rel);
  mkdirSync(join(dest, '..'), { recursive: true });
  copyFileSync(file, dest);
  return dest;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [src, dst = 'prebuilds'] = process.argv.slice(2);
  if (!src) {
    console.error('usage: place-prebuilds.mjs <dir-with-artifacts> [prebuilds-dir]');
    process.exit(2);
  }
  const files = readdirSync(src, { recursive: true })
    .map(String)
    .filter((f) => /^kubenode\..+\.node$/.test(basename(f)));
  if (files.length === 0) {
    console.error(`no kubenode.*.node artifacts under ${src}`);
    process.exit(1);
  }
  for (const f of files) {
    console.log(`${f} -> ${placePrebuild(join(src, f), dst)}`);
  }
}
