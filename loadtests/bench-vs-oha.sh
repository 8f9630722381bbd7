#!/usr/bin/env bash
# Generator CPU per request: `elicitkit load` (closed model on Goose, and the
# open model) next to oha, on the same trivial endpoint (tools/call `stats`,
# one POST, no elicitation) of the same `elicitkit serve`, in one run.
#
#   cargo build --release && cargo install oha && loadtests/bench-vs-oha.sh
#
# SECS (default 10) per generator, CONC (default 4) connections/users,
# RATE (default 3000) for the open model, WORKERS (default 1) server threads.
# Prints requests, requests/s, CPU seconds and µs of CPU per request for each.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/elicitkit}
SECS=${SECS:-10}
CONC=${CONC:-4}
RATE=${RATE:-3000}
WORKERS=${WORKERS:-1}
command -v oha >/dev/null || { echo "oha not found: cargo install oha" >&2; exit 2; }
out="$(mktemp -d)"
trap 'kill "$srv" 2>/dev/null || true; rm -rf "$out"' EXIT

"$BIN" serve --listen 127.0.0.1:0 --workers "$WORKERS" >"$out/serve.out" 2>/dev/null &
srv=$!
for _ in $(seq 50); do grep -q 'listening on' "$out/serve.out" 2>/dev/null && break; sleep 0.1; done
base=$(sed -n 's/^listening on //p' "$out/serve.out")
url="$base/mcp"
echo "target $url (serve --workers $WORKERS), ${SECS}s each, $CONC connections"

body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stats","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}},"io.modelcontextprotocol/clientInfo":{"name":"oha","version":"1"}}}}'

report() { # name requests cpu_seconds
  awk -v n="$1" -v r="$2" -v c="$3" -v s="$SECS" \
    'BEGIN { printf "%-22s %9d requests %9.0f req/s  CPU %6.2fs  %6.1f µs/request\n", n, r, r / s, c, (r > 0 ? c * 1e6 / r : 0) }'
}

oha_run() { # label extra-args...
  local label=$1; shift
  /usr/bin/time -f '%U %S' -o "$out/oha.time" \
    oha -z "${SECS}s" -c "$CONC" --no-tui --output-format json -m POST "$@" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: stats' \
    -H 'Authorization: Bearer alice' -d "$body" "$url" >"$out/oha.json"
  local req
  req=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(d["statusCodeDistribution"].values()))' "$out/oha.json")
  report "$label" "$req" "$(awk '{print $1 + $2}' "$out/oha.time")"
}

run_ek() { # id extra-args...
  local id=$1; shift
  /usr/bin/time -f '%U %S' -o "$out/$id.time" \
    "$BIN" load --plan loadtests/trivial.toml --target "$url" --duration "${SECS}s" \
    --out "$out" --run-id "$id" --quiet "$@" >/dev/null
  local req inner
  req=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"])' "$out/$id/summary.json")
  inner=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["generator_cpu"]["cpu_s"])' "$out/$id/summary.json")
  report "elicitkit $id" "$req" "$(awk '{print $1 + $2}' "$out/$id.time")"
  report "  (during the run)" "$req" "$inner"
}
oha_run "oha (full speed)"
run_ek closed --users "$CONC"
oha_run "oha (-q $RATE)" -q "$RATE"
run_ek open --rate "$RATE"
