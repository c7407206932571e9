#!/usr/bin/env bash
# Installs everything kubenode needs on a fresh Debian machine with Node (24 LTS; 20 and 22 also work), Rust and Go:
# system packages, npm dependencies, and the native build (prebuilds/ + dist/).
# With --prebuilt, prebuilds/ and ts/binding.d.ts are already there (built elsewhere): only the
# TypeScript is compiled, and no Rust toolchain is needed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES="iproute2 nftables conntrack uidmap openssl procps util-linux socat"

missing=()
for p in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The committed lockfile records every platform's optional packages (scripts/lock-platforms.mjs
# completes it after `npm install`), so `npm ci` installs exactly it on each platform.
npm ci --no-audit --no-fund --prefer-offline
if [ "${1:-}" = --prebuilt ]; then
  npm run build:ts
else
  # A rustup that does not install the toolchain rust-toolchain.toml names on first use (1.28.0,
  # or auto-install turned off) leaves a fresh machine's cargo failing with "toolchain '1.88.0-…'
  # is not installed". (A bare `rustup toolchain install` needs rustup 1.28 or later.)
  if command -v rustup >/dev/null 2>&1 && ! rustup show active-toolchain >/dev/null 2>&1; then
    rustup toolchain install
  fi
  npm run build
fi
