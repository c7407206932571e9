#!/usr/bin/env bash
# prepare.sh — build the Go peer binaries (upstream Kubernetes code) into a
# cache folder outside git tracking.
#
# Usage:
#   benches/peers/prepare.sh [--force] [--release V] [target ...]
#
# Targets: bitmap-bench sysctl-bench userns-bench cidr-bench conntrack-bench quote-peer
#          kube-apiserver kube-controller-manager kube-proxy etcd all   (default: all)
#
# Output folder: ${KUBENODE_PEERS_BIN:-<repo>/.cache/peers/bin}
#
# --release V builds from Kubernetes V (e.g. 1.36.3) instead of the reference
# release of go.mod: with `go build -modfile=go.V.mod` (written by
# update-deps.sh) into the subfolder vV of the output folder. Naming the
# reference release is the same as leaving the option out.
#
# A target is rebuilt only when its binary is missing or older than go.mod,
# go.sum, this script, or one of the target's own sources (cmd/<target>/ and,
# for the bench programs, internal/). --force rebuilds anyway.
#
# Environment:
#   KUBENODE_PEERS_BIN  output folder (created if missing)
#   GO                  Go toolchain to use (default: go in PATH, else /usr/local/go/bin/go)
#
# The build is `GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath -ldflags='-s -w'`.
# The first build downloads the module graph (~0.7 GB) and takes minutes for
# kube-apiserver; see README.md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=${KUBENODE_PEERS_BIN:-$repo/.cache/peers/bin}

benches=(bitmap-bench sysctl-bench userns-bench cidr-bench conntrack-bench quote-peer)
servers=(kube-apiserver kube-controller-manager kube-proxy etcd)
all=("${benches[@]}" "${servers[@]}")

die() { echo "prepare: error: $*" >&2; exit 1; }
usage() { sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; }

force=0
release=
targets=()
want_release=0
for a in "$@"; do
	if [ "$want_release" = 1 ]; then
		release=$a
		want_release=0
		continue
	fi
	case "$a" in
	-h | --help) usage; exit 0 ;;
	-f | --force) force=1 ;;
	--release) want_release=1 ;;
	--release=*) release=${a#--release=} ;;
	all) targets+=("${all[@]}") ;;
	-*) die "unknown option '$a' (see --help)" ;;
	*)
		ok=0
		for t in "${all[@]}"; do [ "$t" = "$a" ] && ok=1; done
		[ "$ok" = 1 ] || die "unknown target '$a'; valid targets: ${all[*]} all"
		targets+=("$a")
		;;
	esac
done
[ "$want_release" = 0 ] || die "--release needs a version, e.g. --release 1.36.3"
[ "${#targets[@]}" -gt 0 ] || targets=("${all[@]}")
# de-duplicate, keep order
mapfile -t targets < <(printf '%s\n' "${targets[@]}" | awk '!seen[$0]++')

GO=${GO:-$(command -v go || true)}
[ -n "$GO" ] || GO=/usr/local/go/bin/go
[ -x "$GO" ] || die "no Go toolchain found (install Go >= 1.26 or set GO=/path/to/go)"
export GOTOOLCHAIN=local CGO_ENABLED=0

# The module files of the release: go.mod/go.sum for the reference one,
# go.V.mod/go.V.sum (one -modfile) for an older one, built into their own folder.
modfile=$here/go.mod
sumfile=$here/go.sum
modflag=()
if [ -n "$release" ]; then
	release=${release#v}
	[[ $release =~ ^1\.[0-9]+\.[0-9]+$ ]] || die "--release must look like 1.N.M (got '$release')"
	ref=$(sed -n 's/^[[:space:]]*k8s\.io\/kubernetes v\([0-9][0-9.]*\).*/\1/p' "$modfile" | head -n1)
	if [ "$release" != "$ref" ]; then
		modfile=$here/go.$release.mod
		sumfile=$here/go.$release.sum
		if [ ! -f "$modfile" ]; then
			known=$(cd "$here" && ls go.*.mod 2>/dev/null | sed 's/^go\.//; s/\.mod$//' | paste -sd' ')
			die "no module files for Kubernetes v$release (reference: v$ref; older releases: ${known:-none}); add it with benches/peers/update-deps.sh $ref ${known:+$known }$release"
		fi
		modflag=("-modfile=$modfile")
		bin=$bin/v$release
	fi
fi

mkdir -p "$bin" || die "cannot create output folder $bin"
bin=$(cd "$bin" && pwd)

# Serialise concurrent runs (e.g. parallel test workers) on the same folder.
if command -v flock >/dev/null 2>&1; then
	exec 9>"$bin/.prepare.lock"
	flock 9
fi

is_bench() { local t; for t in "${benches[@]}"; do [ "$t" = "$1" ] && return 0; done; return 1; }

# up_to_date TARGET: the binary exists and no input is newer than it.
up_to_date() {
	local t=$1 out=$bin/$1 dirs
	[ -x "$out" ] || return 1
	dirs=("$here/cmd/$t")
	is_bench "$t" && dirs+=("$here/internal")
	[ -z "$(find "$modfile" "$sumfile" "$here/prepare.sh" "${dirs[@]}" -newer "$out" -print -quit)" ]
}

kv=
k8s_version() { # version of k8s.io/kubernetes selected by go.mod
	[ -n "$kv" ] || kv=$(cd "$here" && "$GO" list "${modflag[@]}" -m -f '{{.Version}}' k8s.io/kubernetes) ||
		die "cannot resolve k8s.io/kubernetes from $modfile (try benches/peers/update-deps.sh)"
	echo "$kv"
}

build() {
	local t=$1 out=$bin/$1 ldflags='-s -w' start
	if [ "$t" = kube-apiserver ] || [ "$t" = kube-controller-manager ] || [ "$t" = kube-proxy ]; then
		# What hack/lib/version.sh stamps into release builds, so /version
		# reports the real release instead of v0.0.0-master.
		local v major minor pkg=k8s.io/component-base/version
		v=$(k8s_version)
		major=${v#v}; major=${major%%.*}
		minor=${v#v*.}; minor=${minor%%.*}
		ldflags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	fi
	echo "prepare: building $t ..." >&2
	start=$(date +%s)
	if ! (cd "$here" && "$GO" build "${modflag[@]}" -trimpath -ldflags="$ldflags" -o "$out.tmp.$$" "./cmd/$t"); then
		rm -f "$out.tmp.$$"
		die "go build of $t failed (module: $here; if go.mod needs updates run benches/peers/update-deps.sh)"
	fi
	mv -f "$out.tmp.$$" "$out"
	echo "prepare: built $t in $(($(date +%s) - start))s" >&2
}

for t in "${targets[@]}"; do
	if [ "$force" = 0 ] && up_to_date "$t"; then
		echo "prepare: $t is up to date" >&2
	else
		build "$t"
	fi
done

echo "prepare: binaries in $bin" >&2
for t in "${targets[@]}"; do
	echo "$bin/$t"
done
