#!/usr/bin/env bash
# Packs kubenode, installs the tarball into an empty project with no Rust toolchain on PATH,
# and loads it through require(), import and the CLI. Run after `npm run build`.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tarball=$(npm pack --silent --pack-destination "$work" | tail -n 1)
echo "check-tarball: packed $tarball ($(du -h "$work/$tarball" | cut -f1))"
listing=$(tar -tzf "$work/$tarball")
for want in package/dist/index.js package/dist/index.d.ts package/dist/binding.d.ts package/dist/cli/main.js \
  "package/prebuilds/$(node -p 'process.platform + "-" + process.arch')/"; do
  grep -q "^$want" <<<"$listing" || { echo "check-tarball: $want missing from the tarball" >&2; exit 1; }
done
if grep -Eq '\.rs$|Cargo\.toml$|^package/crates/|^package/ts/' <<<"$listing"; then
  echo "check-tarball: the tarball carries sources it should not:" >&2
  grep -E '\.rs$|Cargo\.toml$|^package/crates/|^package/ts/' <<<"$listing" >&2
  exit 1
fi

mkdir "$work/app"
cd "$work/app"
echo '{"name":"kubenode-install-check","version":"1.0.0","private":true}' > package.json
npm install --silent --no-audit --no-fund --prefer-offline "$work/$tarball"

# A PATH with node but without cargo/rustc: the install must not need a Rust toolchain.
node_dir=$(dirname "$(command -v node)")
clean_path="$node_dir:/usr/bin:/bin"
if PATH="$clean_path" command -v cargo >/dev/null 2>&1; then
  echo "check-tarball: cargo is still reachable on $clean_path" >&2
  exit 1
fi
PATH="$clean_path" node -e "
const k = require('kubenode');
const m = new k.bitmap.AllocationBitmap(8, 'check');
if (m.allocateNext() === null) throw new Error('allocation failed');
console.log('check-tarball: require ok, binary', k.nativePath());
"
PATH="$clean_path" node --input-type=module -e "
import { bitmap } from 'kubenode';
const m = new bitmap.AllocationBitmap(4, 'check', { strategy: 'contiguous-scan' });
if (m.allocateNext() !== 0) throw new Error('unexpected slot');
console.log('check-tarball: import ok');
"
PATH="$clean_path" ./node_modules/.bin/kubenode doctor -o json >/dev/null
echo "check-tarball: CLI ok"
