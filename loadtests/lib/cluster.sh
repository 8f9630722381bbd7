# Shared by loadtests/scaleout.sh and loadtests/capacity.sh (sourced, not
# run): instances of `elicitkit serve` on one Redis behind the nginx recipe,
# on 127.0.0.1 only. Every process started is recorded in `pids` and
# stopped by its PID on exit. Needs BIN and WORKERS set, the repository root
# as the working directory, and `out` for the results.

for c in redis-server redis-cli nginx python3 curl; do
  command -v "$c" >/dev/null || { echo "$c missing (apt-get install redis-server nginx curl)" >&2; exit 2; }
done
[ -x "$BIN" ] || { echo "$BIN not built: cargo build --release" >&2; exit 2; }
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
# Durable: serve refuses a Redis that would forget completions in a restart.
redis-server --bind 127.0.0.1 --port "$redis_port" --appendonly yes --appendfsync always --dir "$tmp" \
  --logfile "$tmp/redis.log" &
redis_pid=$!
pids+=("$redis_pid")
wait_port "$redis_port"

# serve_on STORE ID ALLOWED_HOST [PUBLIC_URL]: starts an instance; sets
# SRV_PID and SRV_PORT. Behind nginx, PUBLIC_URL (nginx's) makes URL-flow
# links name nginx, so the URL-flow scenario runs there as it does direct.
serve_on() {
  SRV_PORT=$(free_port)
  local public=()
  [ -n "${4:-}" ] && public=(--public-url "$4")
  "$BIN" serve --listen "127.0.0.1:$SRV_PORT" --workers "$WORKERS" --store "$1" --instance-id "$2" \
    --key-file "$tmp/keys" --allowed-host "$3" "${public[@]}" >"$tmp/$2.log" 2>&1 &
  SRV_PID=$!
  pids+=("$SRV_PID")
  wait_port "$SRV_PORT"
}

# nginx_on PORT UPSTREAM...: nginx from the recipe's template; sets NG_PID
# and NG_PIDS (the master and its workers, for CPU accounting).
nginx_on() {
  local listen=$1 prefix="$tmp/nginx-$1" servers=""
  shift
  mkdir -p "$prefix"
  for u in "$@"; do servers+="        server $u;"$'\n'; done
  python3 -c '
import sys
t = open(sys.argv[1]).read()
print(t.replace("{{PREFIX}}", sys.argv[2]).replace("{{LISTEN}}", sys.argv[3]).replace("{{SERVERS}}", sys.argv[4]), end="")
' loadtests/nginx/elicitkit.conf.template "$prefix" "127.0.0.1:$listen" "$servers" >"$prefix/nginx.conf"
  nginx -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" &
  NG_PID=$!
  pids+=("$NG_PID")
  wait_port "$listen"
  # nginx's workers are children of its master: count them too.
  # shellcheck disable=SC2207
  NG_PIDS=("$NG_PID" $(pgrep -P "$NG_PID" || true))
}
