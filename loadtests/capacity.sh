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
# Extra `load` flags, e.g. EXTRA="--samples 2 --bisections 3 --duration 2s".
EXTRA=${EXTRA:-}
[ -x "$BIN" ] || { echo "$BIN not built: cargo build --release" >&2; exit 2; }
for c in redis-server redis-cli nginx python3; do
  command -v "$c" >/dev/null || { echo "$c missing (apt-get install redis-server nginx)" >&2; exit 2; }
done
out="reports/capacity-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }

# A key ring every instance shares: a random 32-byte key, never on argv.
python3 -c 'import base64,os; print("1:" + base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("="))' >"$tmp/keys"
redis_port=$(free_port)
redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no --dir "$tmp" \
  --logfile "$tmp/redis.log" &
redis_pid=$!
pids+=("$redis_pid")
wait_port "$redis_port"

runs=()
IFS=',' read -ra counts <<<"$COUNTS"
for n in "${counts[@]}"; do
  nginx_port=$(free_port)
  procs=("$redis_pid"); servers=""
  for i in $(seq "$n"); do
    port=$(free_port)
    # One Redis DB per count, shared by its instances.
    "$BIN" serve --listen "127.0.0.1:$port" --workers "$WORKERS" --store "redis://127.0.0.1:$redis_port/$n" \
      --instance-id "c$n-$i" --key-file "$tmp/keys" --allowed-host "127.0.0.1:$nginx_port" \
      >"$tmp/c$n-$i.log" 2>&1 &
    pids+=("$!"); procs+=("$!")
    wait_port "$port"
    servers+="        server 127.0.0.1:$port;"$'\n'
  done
  prefix="$tmp/nginx-$n"
  mkdir -p "$prefix"
  python3 -c '
import sys
t = open(sys.argv[1]).read()
print(t.replace("{{PREFIX}}", sys.argv[2]).replace("{{LISTEN}}", sys.argv[3]).replace("{{SERVERS}}", sys.argv[4]), end="")
' loadtests/nginx/elicitkit.conf.template "$prefix" "127.0.0.1:$nginx_port" "$servers" >"$prefix/nginx.conf"
  nginx -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" &
  ng=$!
  pids+=("$ng"); procs+=("$ng")
  wait_port "$nginx_port"
  # nginx's workers are children of its master: count them too.
  for w in $(pgrep -P "$ng" || true); do procs+=("$w"); done
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
