#!/usr/bin/env bash
# Installs the TypeScript SDK interop server's pinned dependencies (package-lock.json) into
# ./node_modules. Idempotent: does nothing when node_modules exists and is newer than the lockfile.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if [[ -d node_modules && ! package-lock.json -nt node_modules ]]; then
    exit 0
fi
command -v npm >/dev/null || { echo "install.sh: npm not found (needs Node >= 20)" >&2; exit 1; }
echo "install.sh: npm ci in $PWD" >&2
npm ci --no-audit --no-fund >&2
touch node_modules
