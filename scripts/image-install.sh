#!/bin/sh
# The image's install stage (Containerfile), also replayed by test/deploy/image.test.ts, so the
# two cannot drift. Usage: image-install.sh PREFIX TARBALL
#
# Installs the packed kubenode tarball into PREFIX/node_modules together with the optional peers
# the daemons need: npm never installs optional peers on its own, and without them neither
# daemon starts. The peers are pinned to the versions kubenode's own suite runs with (the
# tarball's devDependencies), which load on every Node the package supports.
set -eu
prefix=$1
tarball=$2
mkdir -p "$prefix"
cd "$prefix"
npm init -y >/dev/null
npm install --omit=dev --ignore-scripts --no-audit --no-fund "$tarball"
peers=$(node -e '
const p = require("./node_modules/kubenode/package.json");
console.log(Object.keys(p.peerDependencies).map((n) => n + "@" + p.devDependencies[n]).join(" "));
')
# shellcheck disable=SC2086 # one word per peer
npm install --omit=dev --ignore-scripts --no-audit --no-fund $peers
node -e '
require("./node_modules/kubenode/package.json");
require("@kubernetes/client-node");
require("prom-client");
'
