#!/usr/bin/env bash
# Generator CPU per request: `elicitkit load` (closed model on Goose, and the
# open model) next to oha, on the same trivial endpoint (tools/call `stats`,
# one POST, no elicitation) of the same `elicitkit serve`, in one run, at
# each concurrency of a sweep.
#
#   cargo build --release && cargo install oha --version 1.16.0 --profile pgo --locked && loadtests/bench-vs-oha.sh
#   CONCS="4 64 512" SECS=10 RATE=3000 loadtests/bench-vs-oha.sh
#   TLS=1 loadtests/bench-vs-oha.sh      # https: both through nginx terminating TLS
#
# oha's `pgo` profile is its whole-program build (fat LTO, one codegen unit;
# without profile data here), like elicitkit's release profile: a plain
# `cargo install oha` costs 14-18 % more CPU per request and flatters us.
#
# Requests are what the server received (its POST /mcp counter, read from
# /stats before and after each run), so each side is charged for everything
# it sent, launch and drain included, and neither side's own count is trusted.
# Generator CPU is the whole process's (user + system, /usr/bin/time); the
# server's CPU per request is read from /proc for the same window, so a
# generator that makes the target work harder than oha does shows.
#
# SECS (default 10) per run, CONCS (default "4 64 512") connections / users /
# round trips in flight, RATE (default 3000) for the open model, WORKERS
# (default 1) server threads, PRINCIPALS (default: elicitkit's own choice, one
# per user) passed to `load --principals`, MODELS (default "closed open") the
# models to run, RUNS (default 1) oha-then-elicitkit pairs per model and
# concurrency, each ratio taken within its pair, with the median and range
# over the pairs (one noisy pair does not make the verdict), and the ratio of
# each side's best run (noise on a shared machine only adds CPU, so the
# cheapest run is each side's least disturbed). Pin with taskset for steadier
# numbers, e.g. `taskset -c 1 loadtests/bench-vs-oha.sh` with the server on 0
# (SERVER_CPU=0).
#
# EXACT=1: after the sweep, the generator's exact cost per request at the
# same concurrencies (loadtests/generator-cost.sh: allocations and system
# calls counted by perf, which CPU noise does not move); where perf cannot
# count (no root, no uprobes) it says so and the sweep's result stands.
#
# TLS=1: the same sweep over https, through nginx terminating TLS on
# 127.0.0.1 in front of the server (loadtests/lib/tls-front.sh: a throwaway
# CA and leaf made by openssl); oha with --insecure, elicitkit with --cacert.
# Both keep their connections alive, so the handshakes are few and the cost
# is mostly the TLS record layer; requests are still counted at the server.
set -euo pipefail
cd "$(dirname "$0")/.."
. loadtests/lib/listening.sh
. loadtests/lib/tls-front.sh
BIN=${BIN:-target/release/elicitkit}
SECS=${SECS:-10}
CONCS=${CONCS:-4 64 512}
RATE=${RATE:-3000}
WORKERS=${WORKERS:-1}
PRINCIPALS=${PRINCIPALS:-}
MODELS=${MODELS:-closed open}
RUNS=${RUNS:-1}
SERVER_CPU=${SERVER_CPU:-}
TLS=${TLS:-}
command -v oha >/dev/null || { echo "oha not found: cargo install oha --version 1.16.0 --profile pgo --locked" >&2; exit 2; }
[ -x "$BIN" ] || { echo "$BIN not found: cargo build --release" >&2; exit 2; }
out="$(mktemp -d)"
trap 'tls_front_stop "$out/tls"; kill "$srv" 2>/dev/null || true; rm -rf "$out"' EXIT

pin=()
[ -n "$SERVER_CPU" ] && pin=(taskset -c "$SERVER_CPU")
"${pin[@]}" "$BIN" serve --listen 127.0.0.1:0 --workers "$WORKERS" >"$out/serve.out" 2>/dev/null &
srv=$!
base=$(listening_url "$out/serve.out" "$srv") || exit 1
url="$base/mcp"
oha_tls=()
ek_tls=()
if [ -n "$TLS" ]; then
  port=$(tls_front "$out/tls" "${base#http://}") || exit 1
  url="https://127.0.0.1:$port/mcp"
  oha_tls=(--insecure)
  ek_tls=(--cacert "$out/tls/ca.pem")
fi
tck=$(getconf CLK_TCK)
echo "target $url (serve --workers $WORKERS), ${SECS}s per run, concurrency: $CONCS"

body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stats","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}},"io.modelcontextprotocol/clientInfo":{"name":"oha","version":"1"}}}}'

posts() { # POST /mcp requests the server has received so far
  curl -sf -H 'Authorization: Bearer alice' "$base/stats" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"]["mcp_post"])'
}
server_cpu() { # the server's user + system CPU so far, in seconds
  awk -v t="$tck" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$srv/stat"
}

# One row per run: model conc label sent gen_cpu_s srv_cpu_s wall_s.
rows="$out/rows"
: >"$rows"
measure() { # model conc label command...
  local model=$1 conc=$2 label=$3; shift 3
  local p0 c0 t0 p1 c1 t1
  p0=$(posts); c0=$(server_cpu); t0=$(date +%s.%N)
  /usr/bin/time -f '%U %S' -o "$out/time" "$@" >"$out/run.log" 2>&1 ||
    { echo "$label at $conc failed:" >&2; tail -5 "$out/run.log" >&2; exit 1; }
  p1=$(posts); c1=$(server_cpu); t1=$(date +%s.%N)
  local gen
  gen=$(awk '{ print $1 + $2 }' "$out/time")
  echo "$model $conc $label $((p1 - p0)) $gen $(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }') $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" >>"$rows"
  awk -v m="$model" -v n="$conc" -v l="$label" -v r="$((p1 - p0))" -v g="$gen" -v c0="$c0" -v c1="$c1" \
    'BEGIN { printf "  %-6s %4d %-10s %9d sent  generator %6.2f s CPU  %6.1f µs/request  server %6.1f µs/request\n", m, n, l, r, g, (r > 0 ? g * 1e6 / r : 0), (r > 0 ? (c1 - c0) * 1e6 / r : 0) }'
}

oha_cmd() { # conc extra-args...: sets oha_args to the oha command line
  local conc=$1; shift
  oha_args=(oha -z "${SECS}s" -c "$conc" --no-tui --output-format json -m POST "$@" ${oha_tls[@]+"${oha_tls[@]}"}
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: stats'
    -H 'Authorization: Bearer alice' -d "$body" "$url")
}

for conc in $CONCS; do
  # The open model keeps at most `conc` round trips in flight, as oha -c conc
  # holds `conc` connections.
  sed "s/^\[load\]$/[load]\nmax_in_flight = $conc/" loadtests/trivial.toml >"$out/trivial-$conc.toml"
  ek=("$BIN" load --plan "$out/trivial-$conc.toml" --target "$url" --duration "${SECS}s"
    --out "$out" --quiet ${ek_tls[@]+"${ek_tls[@]}"})
  [ -n "$PRINCIPALS" ] && ek+=(--principals "$PRINCIPALS")
  echo "concurrency $conc"
  for _ in $(seq "$RUNS"); do for model in $MODELS; do
    case $model in
    closed)
      oha_cmd "$conc"
      measure closed "$conc" oha "${oha_args[@]}"
      measure closed "$conc" elicitkit "${ek[@]}" --run-id "closed-$conc" --users "$conc"
      ;;
    open)
      oha_cmd "$conc" -q "$RATE"
      measure open "$conc" oha "${oha_args[@]}"
      measure open "$conc" elicitkit "${ek[@]}" --run-id "open-$conc" --rate "$RATE"
      ;;
    *) echo "MODELS: closed or open, not $model" >&2; exit 2 ;;
    esac
  done; done
done

echo
echo "elicitkit ÷ oha, CPU per request (generator; and the server's, driven by each)"
printf '%-7s %6s %10s %10s %10s %10s %10s %10s\n' model conc "oha µs" "ek µs" "ek/oha" "srv(oha)" "srv(ek)" "srv ratio"
# One line per pair (elicitkit's run against the oha run just before it),
# then the median and range of the ratio over each model and concurrency.
awk '
  { key = $1 " " $2; per = ($4 > 0 ? $5 * 1e6 / $4 : 0); srv = ($4 > 0 ? $6 * 1e6 / $4 : 0)
    if ($3 == "oha") { o = per; os = srv
      if (!((key) in bo) || per < bo[key]) bo[key] = per
      next }
    if (!((key) in be) || per < be[key]) be[key] = per
    ratio = (o > 0 ? per / o : 0)
    printf "%-7s %6d %10.1f %10.1f %10.2f %10.1f %10.1f %10.2f\n", $1, $2, o, per, ratio, os, srv, (os > 0 ? srv / os : 0)
    if (!(key in c)) keys[++n] = key
    r[key, ++c[key]] = ratio }
  END { if (c[keys[1]] < 2) exit
    print ""
    for (i = 1; i <= n; i++) { k = keys[i]; m = c[k]
      for (a = 2; a <= m; a++) { v = r[k, a]; for (b = a - 1; b >= 1 && r[k, b] > v; b--) r[k, b + 1] = r[k, b]; r[k, b + 1] = v }
      med = (m % 2 ? r[k, (m + 1) / 2] : (r[k, m / 2] + r[k, m / 2 + 1]) / 2)
      split(k, f, " ")
      printf "%-7s %6d  ek/oha median %.2f, %.2f–%.2f over %d pairs; best runs %.1f / %.1f µs = %.2f\n", f[1], f[2], med, r[k, 1], r[k, m], m, be[k], bo[k], (bo[k] > 0 ? be[k] / bo[k] : 0) } }
' "$rows"

if [ -n "${EXACT:-}" ]; then
  echo
  echo "exact cost per request (loadtests/generator-cost.sh, plain http):"
  BIN="$BIN" CONCS="$CONCS" MODELS="$MODELS" RATE="$RATE" loadtests/generator-cost.sh ||
    echo "(exact counts not available here)"
fi
