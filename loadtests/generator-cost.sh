#!/usr/bin/env bash
# The load generator's exact cost per request: heap allocations (uprobes on
# mimalloc's allocation entry points in the elicitkit binary) and system
# calls (the raw_syscalls:sys_enter tracepoint), counted by `perf stat` for
# the `elicitkit load` process alone, on the trivial endpoint bench-vs-oha.sh
# uses (tools/call `stats`, one POST). Counts, not CPU time: a regression of
# a few percent shows here where this VM's ±30 % CPU noise hides it.
#
#   cargo build --release --bin elicitkit && sudo loadtests/generator-cost.sh
#   CONCS="4 64 512" MODELS="closed open" loadtests/generator-cost.sh
#
# PLAN (default loadtests/trivial.toml) is the plan run, e.g. a 2025-11-25
# one (its flows' requests are counted the same way, per POST the server
# received).
#
# Each model and concurrency runs twice, SHORT (default 1s) and LONG
# (default 4s); the counts per request are the differences over the
# difference in requests (the server's POST /mcp counter), so the fixed cost
# of start-up, discovery and the report is fitted out. Needs perf with
# uprobes and tracepoints (root, or perf_event_paranoid <= -1 and tracefs
# access); says so and exits 2 otherwise. RATE (default 3000) for the open
# model. bench-vs-oha.sh runs it after its sweep with EXACT=1.
set -euo pipefail
cd "$(dirname "$0")/.."
. loadtests/lib/listening.sh
BIN=${BIN:-target/release/elicitkit}
CONCS=${CONCS:-4 64 512}
MODELS=${MODELS:-closed open}
SHORT=${SHORT:-1}
LONG=${LONG:-4}
RATE=${RATE:-3000}
PLAN=${PLAN:-loadtests/trivial.toml}
[ -x "$BIN" ] || { echo "$BIN not found: cargo build --release --bin elicitkit" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf not found: exact counts need it" >&2; exit 2; }
group="ekcost$$"
out="$(mktemp -d)"
srv=
trap 'perf probe -q -d "$group:*" 2>/dev/null || true; [ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$out"' EXIT

# Every way the Rust global allocator enters mimalloc (its GlobalAlloc
# calls the aligned entry points).
events=(-e raw_syscalls:sys_enter)
for f in mi_malloc_aligned mi_zalloc_aligned mi_realloc_aligned; do
  if perf probe -q -x "$BIN" --add "$group:$f=$f" 2>"$out/probe.err"; then
    events+=(-e "$group:$f")
  else
    echo "no uprobe on $f in $BIN (root and debug symbols needed): $(head -1 "$out/probe.err")" >&2
    exit 2
  fi
done
perf stat -x, -o "$out/check" "${events[@]}" -- true 2>/dev/null ||
  { echo "perf stat cannot count ${events[*]} here (perf_event_paranoid, tracefs)" >&2; exit 2; }

RUST_LOG=warn "$BIN" serve --listen 127.0.0.1:0 --workers 1 >"$out/srv.out" 2>/dev/null &
srv=$!
base=$(listening_url "$out/srv.out" "$srv") || exit 1
url="$base/mcp"
posts() {
  curl -sf -H 'Authorization: Bearer alice' "$base/stats" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"]["mcp_post"])'
}

run() { # model conc secs: prints "requests syscalls allocations"
  local model=$1 conc=$2 secs=$3 shape p0 p1
  sed "s/^\[load\]$/[load]\nmax_in_flight = $conc/" "$PLAN" >"$out/plan.toml"
  if [ "$model" = closed ]; then shape=(--users "$conc"); else shape=(--rate "$RATE"); fi
  p0=$(posts)
  # A verdict (1 failed, 3 inconclusive: a busy host may not deliver the
  # open model's rate) leaves the counts exact; a usage error or crash does not.
  local rc=0
  perf stat -x, -o "$out/stat" "${events[@]}" -- "$BIN" load --plan "$out/plan.toml" --target "$url" \
    --duration "${secs}s" "${shape[@]}" --out "$out/runs" --quiet >"$out/load.log" 2>&1 || rc=$?
  case $rc in
  0 | 1 | 3) ;;
  *) echo "load $model $conc ${secs}s exited $rc:" >&2; tail -5 "$out/load.log" >&2; exit 1 ;;
  esac
  p1=$(posts)
  awk -F, -v r="$((p1 - p0))" -v g="$group" '
    $3 == "raw_syscalls:sys_enter" { sys = $1 }
    index($3, g ":") == 1 { alloc += $1 }
    END { print r, sys + 0, alloc + 0 }' "$out/stat"
}

printf '%-7s %5s %12s %12s %14s\n' model conc requests syscalls/req allocations/req
for model in $MODELS; do
  for conc in $CONCS; do
    read -r r0 s0 a0 < <(run "$model" "$conc" "$SHORT")
    read -r r1 s1 a1 < <(run "$model" "$conc" "$LONG")
    awk -v m="$model" -v c="$conc" -v r0="$r0" -v r1="$r1" -v s0="$s0" -v s1="$s1" -v a0="$a0" -v a1="$a1" \
      'BEGIN { d = r1 - r0; if (d <= 0) { printf "%-7s %5d  no requests between the runs\n", m, c; exit }
               printf "%-7s %5d %12d %12.2f %14.2f\n", m, c, d, (s1 - s0) / d, (a1 - a0) / d }'
  done
done
