#!/usr/bin/env bash
# Scale-out benchmark (issue 14), on 127.0.0.1 only, same plan and driver
# for every setup, in one run:
#   memory-1   one `serve` on the memory store, reached directly
#   redis-1    one `serve` on Redis, behind nginx
#   redis-2    two `serve` instances on one Redis, sharing a key ring, behind nginx
# For each: round trips/s and p99 (end to end) from `elicitkit load`'s
# summary.json; per round trip the Redis network calls the instances made
# (their /stats store.backend_calls: one command or one script each) and the
# commands Redis executed (INFO stats delta, counting those inside scripts); the
# CPU per round trip of the servers, Redis and nginx (from /proc).
#
#   cargo build --release && loadtests/scaleout.sh      # DURATION=10s USERS=16
#
# Every process it starts is stopped by its PID; every load run is bounded
# by DURATION. Results: reports/scaleout-<UTC time>/ (summary.md, reports).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/elicitkit}
DURATION=${DURATION:-10s}
USERS=${USERS:-16}
WORKERS=${WORKERS:-1}
SETUPS=${SETUPS:-memory-1,redis-1,redis-2}
out="reports/scaleout-$(date -u +%Y%m%dT%H%M%SZ)"
# shellcheck source=loadtests/lib/cluster.sh
. loadtests/lib/cluster.sh
cpu_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo "$t"; }

redis_cmds() { redis-cli -p "$redis_port" info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p'; }
# backend_calls PORT...: the instances' Redis round trips so far, summed (demo auth takes any token).
backend_calls() {
  local t=0 p
  for p in "$@"; do
    t=$((t + $(curl -sf -H 'Authorization: Bearer scaleout' "http://127.0.0.1:$p/stats" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["store"].get("backend_calls", 0))')))
  done
  echo "$t"
}

echo "# scale-out benchmark $(date -u +%FT%TZ), $(nproc) cores, $USERS users, $DURATION, serve --workers $WORKERS" | tee "$out/summary.md"
echo "| setup | round trips/s | e2e p50 ms | e2e p99 ms | errors | Redis calls / round trip | Redis cmds / round trip (incl. in scripts) | CPU µs / round trip (servers + Redis + nginx) | verdict |" | tee -a "$out/summary.md"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---|" | tee -a "$out/summary.md"
IFS=',' read -ra setups <<<"$SETUPS"
for setup in "${setups[@]}"; do
  nginx_port=$(free_port)
  case "$setup" in
    memory-1) serve_on memory m1 "127.0.0.1:$nginx_port"; procs=("$SRV_PID"); ports=("$SRV_PORT"); url="http://127.0.0.1:$SRV_PORT/mcp" ;;
    redis-1|redis-2)
      n=${setup#redis-}
      procs=("$redis_pid"); ups=(); ports=()
      for i in $(seq "$n"); do
        # One DB per setup, shared by its instances; links name nginx.
        serve_on "redis://127.0.0.1:$redis_port/$n" "r$n-$i" "127.0.0.1:$nginx_port" "http://127.0.0.1:$nginx_port"
        procs+=("$SRV_PID"); ups+=("127.0.0.1:$SRV_PORT"); ports+=("$SRV_PORT")
      done
      nginx_on "$nginx_port" "${ups[@]}"
      procs+=("${NG_PIDS[@]}")
      url="http://127.0.0.1:$nginx_port/mcp" ;;
    *) echo "unknown setup $setup" >&2; exit 2 ;;
  esac
  c0=$(cpu_ticks "${procs[@]}"); r0=$(redis_cmds); b0=$(backend_calls "${ports[@]}")
  "$BIN" load --target "$url" --users "$USERS" --duration "$DURATION" --quiet --out "$out/$setup" \
    >"$out/$setup.txt" 2>&1 || true
  c1=$(cpu_ticks "${procs[@]}"); r1=$(redis_cmds); b1=$(backend_calls "${ports[@]}")
  python3 - "$out/$setup" "$setup" "$((c1 - c0))" "$((r1 - r0))" "$(getconf CLK_TCK)" "$((b1 - b0))" <<'PY' | tee -a "$out/summary.md"
import glob, json, sys
d = json.load(open(glob.glob(sys.argv[1] + "/*/summary.json")[0]))
setup, ticks, cmds, hz, calls = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
rt = d["round_trips"]["total"]
e2e = d["e2e"]
redis = rt and not setup.startswith("memory")
cmd = f"{cmds / rt:.1f}" if redis else "-"
call = f"{calls / rt:.2f}" if redis else "-"
cpu = f"{ticks / hz * 1e6 / rt:.0f}" if rt else "-"
print(f"| {setup} | {d['rps']:.0f} | {e2e.get('p50_ms', 0):.2f} | {e2e.get('p99_ms', 0):.2f} | {d['round_trips']['unexpected']} | {call} | {cmd} | {cpu} | {'PASSED' if d['passed'] else 'FAILED'} |")
PY
  # Stop this setup's servers and nginx; Redis stays for the next.
  for p in "${procs[@]}"; do [ "$p" = "$redis_pid" ] || kill "$p" 2>/dev/null || true; done
  sleep 0.5
done
echo "results in $out/"
