#!/usr/bin/env node
// Completes package-lock.json with every platform's optional packages, so `npm ci` accepts
// the lockfile on each platform of the release matrix. npm records only the optional
// packages it could resolve where the lockfile was written (npm/cli#4828), and `npm ci`
// then refuses the lockfile as out of sync everywhere. For each locked package's
// optionalDependencies missing from the lockfile, this adds an entry at the exact version
// with os/cpu/libc taken from the package name (the convention of esbuild, biome and
// @napi-rs packages), so npm skips it on other platforms and fetches it on its own.
//   node scripts/lock-platforms.mjs          (after `npm install`; then verify with `npm ci`)
import { readFileSync, writeFileSync } from 'node:fs';

const OS = [
  'android',
  'darwin',
  'freebsd',
  'linux',
  'win32',
  'openharmony',
  'aix',
  'netbsd',
  'openbsd',
  'sunos',
];
const CPU = ['arm64', 'x64', 'ia32', 'arm', 'ppc64', 'riscv64', 's390x', 'loong64', 'mips64el', 'wasm32'];

/** os/cpu/libc of a platform package, from its name; null when the name names no platform. */
export function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.find((p) => OS.includes(p));
  const cpu = parts.find((p) => CPU.includes(p));
  if (!os && !cpu) return null;
  const fields = {};
  if (cpu) fields.cpu = [cpu];
  if (os) fields.os = [os];
  if (os === 'linux') {
    if (parts.includes('musl')) fields.libc = ['musl'];
    else if (parts.some((p) => p.startsWith('gnu')) || !parts.includes('musl')) fields.libc = ['glibc'];
  }
  return fields;
}

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const pkgs = lock.packages;
let added = 0;
for (const [path, meta] of Object.entries(pkgs)) {
  for (const [dep, version] of Object.entries(meta.optionalDependencies ?? {})) {
    // Resolution as Node does it: next to the parent, then at the top level.
    const nested = `${path ? `${path}/` : ''}node_modules/${dep}`;
    if (pkgs[nested] || pkgs[`node_modules/${dep}`]) continue;
    const fields = platformOf(dep);
    if (!fields || !/^\d+\.\d+\.\d+/.test(version)) continue; // not a pinned platform package
    const entry = { version, ...fields, optional: true };
    if (meta.dev) entry.dev = true;
    pkgs[`node_modules/${dep}`] = entry;
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(pkgs).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)),
);
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`lock-platforms: added ${added} platform packages`);
