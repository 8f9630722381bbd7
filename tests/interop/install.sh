#!/usr/bin/env bash
# Installs what the interop servers need, where it is missing (pinned
# versions; each step does nothing when already installed). Called by
# .ci/run and, on first use, by the test launcher (tests/interop/mod.rs).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/ts/install.sh"
"$here/python/install.sh"
