#!/usr/bin/env bash
# Server CPU per MRTR round trip: `elicitkit serve` (exactly-once completion
# records on, as by default) next to the rmcp 3.11 interop server
# (examples/interop_rmcp, TCP_NODELAY on), driven by the same `elicitkit
# load`: one form round trip per flow (serve: `deploy`, rmcp: `place_order`;
# tools/call, input_required, retry with the answer and the state). The
# server runs on one core and the driver on the other, the two servers take
# turns, and each pair's ratio is taken within the pair.
#
#   cargo build --release --bin elicitkit --example interop_rmcp
#   loadtests/server-vs-rmcp.sh
#   CONCS="16 64" RUNS=5 SECS=10 loadtests/server-vs-rmcp.sh
#
# The server's CPU is read by the driver over its measured window (`load
# --cpu-pid`, the summary's target_cpu), divided by the round trips it
# completed in that window. SECS (default 10) per run, WARMUP (default 2s),
# CONCS (default "16 64") users, RUNS (default 3) pairs per concurrency,
# SERVER_CPU (default 0) and DRIVER_CPU (default 1) the cores.
set -euo pipefail
cd "$(dirname "$0")/.."
. loadtests/lib/listening.sh
BIN=${BIN:-target/release/elicitkit}
RMCP=${RMCP:-target/release/examples/interop_rmcp}
SECS=${SECS:-10}
WARMUP=${WARMUP:-2s}
CONCS=${CONCS:-16 64}
RUNS=${RUNS:-3}
SERVER_CPU=${SERVER_CPU:-0}
DRIVER_CPU=${DRIVER_CPU:-1}
for b in "$BIN" "$RMCP"; do
  [ -x "$b" ] || { echo "$b not found: cargo build --release --bin elicitkit --example interop_rmcp" >&2; exit 2; }
done
out="$(mktemp -d)"
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$out"' EXIT

plan() { # server tool arguments [answers]: one form-accept scenario
  printf 'name = "%s-form"\ntimeout = "5s"\nthresholds = ["error_rate < 0.1%%"]\n' "$1"
  printf '[scenarios.form-accept]\nkind = "form-accept"\ntool = "%s"\narguments = %s\n' "$2" "$3"
  [ -z "${4:-}" ] || printf 'answers = %s\n' "$4"
}
plan serve deploy '{ service = "web" }' >"$out/serve.toml"
plan rmcp place_order '{ item = "x" }' '{ gift_wrap = true }' >"$out/rmcp.toml"

start() { # serve|rmcp: starts it on SERVER_CPU, sets srv and url
  local cmd
  if [ "$1" = serve ]; then
    cmd=("$BIN" serve --listen 127.0.0.1:0 --workers 1)
  else
    cmd=("$RMCP" --port 0 --nodelay on)
  fi
  RUST_LOG=warn taskset -c "$SERVER_CPU" "${cmd[@]}" >"$out/srv.out" 2>"$out/srv.err" &
  srv=$!
  url=$(listening_url "$out/srv.out" "$srv") || { echo "$1 did not start:" >&2; cat "$out/srv.err" >&2; exit 1; }
  case $url in */mcp) ;; *) url="$url/mcp" ;; esac
}

run() { # serve|rmcp users: prints "µs/round-trip round-trips/s" (not in a subshell: it sets srv)
  start "$1"
  local id="$1-$2-$RANDOM"
  taskset -c "$DRIVER_CPU" "$BIN" load --plan "$out/$1.toml" --target "$url" --users "$2" \
    --duration "${SECS}s" --warmup "$WARMUP" --cpu-pid "$srv" --out "$out" --run-id "$id" \
    --quiet >"$out/load.log" 2>&1 || { echo "$1 at $2 users failed:" >&2; tail -5 "$out/load.log" >&2; exit 1; }
  kill "$srv"; wait "$srv" 2>/dev/null || true; srv=
  python3 - "$out/$id/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
ok = s["scenarios"]["form-accept"]["outcomes"]["success"]
assert ok > 0 and s["verdict"] == "passed", (s["verdict"], ok)
print(f'{s["target_cpu"]["us_per_round_trip"]:.1f} {s["rps"]:.0f}')
EOF
}
serve_run() { run serve "$1" >"$out/result"; read -r s_us s_rps <"$out/result"; }
rmcp_run() { run rmcp "$1" >"$out/result"; read -r r_us r_rps <"$out/result"; }

echo "server on cpu $SERVER_CPU, driver on cpu $DRIVER_CPU; ${SECS}s (+$WARMUP warm-up) per run, $RUNS pairs per concurrency"
printf '%6s %4s %14s %14s %10s %12s %12s %10s\n' users pair "serve µs/rt" "rmcp µs/rt" "cpu ratio" "serve rt/s" "rmcp rt/s" "rt/s ratio"
for conc in $CONCS; do
  ratios=()
  for i in $(seq "$RUNS"); do
    # Alternate which server goes first, so drift favours neither.
    if [ $((i % 2)) -eq 1 ]; then
      serve_run "$conc"; rmcp_run "$conc"
    else
      rmcp_run "$conc"; serve_run "$conc"
    fi
    ratio=$(awk -v a="$s_us" -v b="$r_us" 'BEGIN { printf "%.3f", a / b }')
    ratios+=("$ratio")
    printf '%6d %4d %14s %14s %10s %12s %12s %10s\n' "$conc" "$i" "$s_us" "$r_us" "$ratio" "$s_rps" "$r_rps" \
      "$(awk -v a="$s_rps" -v b="$r_rps" 'BEGIN { printf "%.2f", a / b }')"
  done
  printf '%s\n' "${ratios[@]}" | sort -n | awk -v c="$conc" '{ v[NR] = $1 } END {
    m = (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)
    printf "%6d users: serve ÷ rmcp CPU per round trip %.3f–%.3f, median %.3f (goal ≤ 0.25)\n", c, v[1], v[NR], m }'
done
