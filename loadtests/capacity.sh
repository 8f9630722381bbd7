#!/usr/bin/env bash
# Capacity across instance counts (issue 14 item 5), on 127.0.0.1 only:
# measures the knee of 1 and 2 `serve` instances on one Redis behind nginx
# with `load --capacity` (coarse steps, bisection, repeated samples; Redis
# commands and the servers' + Redis' + nginx's CPU per round trip per step),
# then `report capacity` fits knee(N) and projects the instances TARGET
# round trips/s needs from that curve.
#
#   cargo build --release && loadtests/capacity.sh     # COUNTS=1,2 TARGET=20000
#
# Each `load --capacity` prints its worst-case duration before it starts.
# Every process it starts is stopped by its PID; every load is bounded.
# Results: reports/capacity-<UTC time>/ (knee-N/ per count, capacity/).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/elicitkit}
PLAN=${PLAN:-loadtests/capacity.toml}
COUNTS=${COUNTS:-1,2}
TARGET=${TARGET:-20000}
WORKERS=${WORKERS:-1}
# Extra `load` flags, e.g. EXTRA="--bisections 3 --duration 2s".
EXTRA=${EXTRA:-}
out="reports/capacity-$(date -u +%Y%m%dT%H%M%SZ)"
# shellcheck source=loadtests/lib/cluster.sh
. loadtests/lib/cluster.sh

runs=()
IFS=',' read -ra counts <<<"$COUNTS"
for n in "${counts[@]}"; do
  nginx_port=$(free_port)
  procs=("$redis_pid"); ups=()
  for i in $(seq "$n"); do
    # One Redis DB per count, shared by its instances.
    serve_on "redis://127.0.0.1:$redis_port/$n" "c$n-$i" "127.0.0.1:$nginx_port" "http://127.0.0.1:$nginx_port"
    procs+=("$SRV_PID"); ups+=("127.0.0.1:$SRV_PORT")
  done
  nginx_on "$nginx_port" "${ups[@]}"
  procs+=("${NG_PIDS[@]}")
  cpu_flags=()
  for p in "${procs[@]}"; do cpu_flags+=(--cpu-pid "$p"); done
  echo "== $n instance(s) behind nginx on 127.0.0.1:$nginx_port"
  # shellcheck disable=SC2086
  "$BIN" load --plan "$PLAN" --capacity --target "http://127.0.0.1:$nginx_port/mcp" \
    --instances "$n" --store-stats "redis://127.0.0.1:$redis_port" "${cpu_flags[@]}" \
    --target-rate "$TARGET" --out "$out" --run-id "knee-$n" --quiet $EXTRA \
    | tee "$out/knee-$n.txt" || true
  runs+=("$n=$out/knee-$n")
  # Stop this count's servers and nginx; Redis stays for the next.
  for p in "${procs[@]}"; do [ "$p" = "$redis_pid" ] || kill "$p" 2>/dev/null || true; done
  sleep 0.5
done
"$BIN" report capacity "${runs[@]}" --target-rate "$TARGET" --out "$out/capacity"
echo "results in $out/"
