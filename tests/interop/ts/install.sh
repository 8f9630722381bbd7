#!/usr/bin/env bash
# Installs the TypeScript SDK interop server's pinned dependencies
# (package-lock.json) into ./node_modules. Idempotent: does nothing when
# node_modules holds what the lock file names (a checksum stamp, and the SDK
# package present); runs `npm ci` otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

stamp="node_modules/.elicitkit-lock.sha256"
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" \
      && -f node_modules/@modelcontextprotocol/server/package.json \
      && -f node_modules/@modelcontextprotocol/node/package.json ]]; then
    exit 0
fi
command -v npm >/dev/null || { echo "install.sh: npm not found (needs Node >= 20)" >&2; exit 1; }
echo "install.sh: npm ci in $PWD" >&2
npm ci --no-audit --no-fund --loglevel=error >&2
printf '%s\n' "$want" > "$stamp"
