#!/usr/bin/env bash
# Runs helm v3, built once from the Go module proxy into .cache/bin (no other download needed).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
version=v3.22.0
bin="$repo/.cache/bin/helm-$version"
if [ ! -x "$bin" ]; then
  mkdir -p "$repo/.cache/bin"
  echo "helm: building $version into .cache/bin" >&2
  (cd /tmp && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOBIN="$repo/.cache/bin" \
    go install "helm.sh/helm/v3/cmd/helm@$version")
  mv "$repo/.cache/bin/helm" "$bin"
fi
exec "$bin" "$@"
