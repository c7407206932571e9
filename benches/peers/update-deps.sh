#!/usr/bin/env bash
# update-deps.sh — regenerate go.mod and go.sum of the Go peer harness from
# scratch for one Kubernetes release.
#
# Usage:
#   benches/peers/update-deps.sh [KV]
#
#   KV   Kubernetes version, e.g. 1.36.3 or v1.36.3. Defaults to the version
#        of k8s.io/kubernetes currently required by go.mod.
#
# What it does (see README.md for the reasons):
#   1. downloads k8s.io/kubernetes@vKV's go.mod and reads its staging modules
#      (the lines `k8s.io/X => ./staging/src/k8s.io/X`) and its `go` version;
#   2. writes a fresh go.mod: module kubenode.dev/peers, that `go` version, and
#      `replace k8s.io/X => k8s.io/X v0.N.M` for every staging module;
#   3. requires k8s.io/kubernetes vKV and go.etcd.io/etcd/server/v3 at the
#      version that k8s.io/apiserver v0.N.M's go.mod requires;
#   4. runs `go mod tidy` over the packages under cmd/ and internal/, then
#      checks that tidy kept both pinned versions.
#
# The result depends only on KV and on the sources in this folder, so running
# it twice gives the same go.mod/go.sum. On failure the previous go.mod/go.sum
# are restored.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"

export GOTOOLCHAIN=local
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
[ -x "$GO" ] || { echo "update-deps: no Go toolchain found (set GO=/path/to/go)" >&2; exit 1; }

die() { echo "update-deps: $*" >&2; exit 1; }

KV=${1:-}
if [ -z "$KV" ]; then
	[ -f go.mod ] || die "no go.mod and no version given; usage: $0 1.36.3"
	KV=$(sed -n 's/^[[:space:]]*k8s\.io\/kubernetes v\([0-9][0-9.]*\).*/\1/p' go.mod | head -n1)
	[ -n "$KV" ] || die "cannot read the k8s.io/kubernetes version from go.mod; pass it: $0 1.36.3"
fi
KV=${KV#v}
[[ $KV =~ ^1\.([0-9]+)\.([0-9]+)$ ]] || die "version must look like 1.N.M (got '$KV')"
SV=0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}

modfile() { # print the path of the downloaded go.mod of module@version
	"$GO" mod download -json "$1" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p'
}

echo "update-deps: k8s.io/kubernetes v$KV, staging modules v$SV"
kmod=$(modfile "k8s.io/kubernetes@v$KV")
[ -s "$kmod" ] || die "k8s.io/kubernetes@v$KV not found on the module proxy"
amod=$(modfile "k8s.io/apiserver@v$SV")
[ -s "$amod" ] || die "k8s.io/apiserver@v$SV not found on the module proxy"

gover=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$kmod" | head -n1)
[ -n "$gover" ] || die "no go directive in k8s.io/kubernetes go.mod"
mapfile -t staging < <(sed -n 's|^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/.*|\1|p' "$kmod" | sort -u)
[ "${#staging[@]}" -gt 0 ] || die "no staging replace lines found in $kmod"
EV=$(sed -n 's|^[[:space:]]*go\.etcd\.io/etcd/server/v3 \(v[^ ]*\).*|\1|p' "$amod" | head -n1)
[ -n "$EV" ] || die "k8s.io/apiserver@v$SV does not require go.etcd.io/etcd/server/v3"
echo "update-deps: go $gover, etcd $EV, ${#staging[@]} staging modules"

backup=$(mktemp -d)
cp go.mod go.sum "$backup"/ 2>/dev/null || true
done_ok=0
finish() {
	if [ "$done_ok" != 1 ]; then
		echo "update-deps: failed; restoring the previous go.mod/go.sum" >&2
		rm -f go.mod go.sum
		cp "$backup"/go.mod "$backup"/go.sum . 2>/dev/null || true
	fi
	rm -rf "$backup"
}
trap finish EXIT

rm -f go.mod go.sum
"$GO" mod init kubenode.dev/peers 2>/dev/null
"$GO" mod edit -go="$gover" -toolchain=none
args=()
for m in "${staging[@]}"; do
	args+=("-replace=$m=$m@v$SV")
done
"$GO" mod edit "${args[@]}"
"$GO" mod edit -require="k8s.io/kubernetes@v$KV" -require="go.etcd.io/etcd/server/v3@$EV"
"$GO" mod tidy
"$GO" mod edit -toolchain=none

# tidy may only raise versions; make sure it kept the pins.
got_k=$("$GO" list -m -f '{{.Version}}' k8s.io/kubernetes)
got_e=$("$GO" list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
[ "$got_k" = "v$KV" ] || die "k8s.io/kubernetes resolved to $got_k, wanted v$KV"
[ "$got_e" = "$EV" ] || die "go.etcd.io/etcd/server/v3 resolved to $got_e, wanted $EV"

done_ok=1
echo "update-deps: wrote go.mod/go.sum (k8s.io/kubernetes $got_k, go.etcd.io/etcd/server/v3 $got_e)"
