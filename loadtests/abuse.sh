#!/usr/bin/env bash
# Abuse benchmark of `elicitkit serve` (issue 13): loopback only, every part
# bounded in time and count, every server it starts stopped by its PID.
#
#   cargo build --release --bin elicitkit --example abuse && loadtests/abuse.sh
#
# Parts (PARTS, comma-separated; default all five):
#   slowloris      legitimate tools/list latency alone, then under CONNS
#                  (default 4000) idle + slowloris connections held open
#                  (target: p99 < 50 ms)
#   slow-bodies    LEGIT (80) tools/list requests over 20 s while CONNS
#                  connections trickle 1 MiB bodies at a byte a second (no
#                  credentials), server at --max-connections SLOW_CAP (3840):
#                  answered count, latency, RSS (target: all answered).
#                  SLOW_TOKEN=NAME sends them as that principal (demo auth:
#                  any name is valid), SLOW_BURST=N sends N body bytes at once
#                  first: the attack past the head-time credential check
#   retries        RETRIES (default 1000) concurrent copies of one final retry
#                  of each side-effecting tool, memory and SQLite stores
#                  (target: one side effect each, identical outcomes)
#   forget-memory  FLOWS URL flows + LEGACY legacy calls (default 10^6 each)
#                  against the memory store, RATE per second (default 0: as
#                  fast as they go); RSS sampled every second
#   forget-sqlite  the same against SQLite (file on /dev/shm when present,
#                  so disk flushes do not bound the count); RSS and file+WAL
#                  (target: flat within 10 % after the first retention window)
#
# Fair shares (issue 51; PARTS=shares runs them all): each measures LEGIT
# (80) legitimate requests, each as its own user on a new connection, spread
# over 20 s, while the attack goes on, and the server's RSS:
#   streams-one    STREAMS (400) 2025-11-25 tools/call streams whose
#   streams-crowd  elicitation is never answered, reopened as they end, at
#                  --max-connections SHARE_CAP (300): one token, one session /
#                  STREAMS made-up names
#   budget         72 connections from 9 made-up names each sending 1 MiB - 1
#                  byte and stalling (again when the server closes them),
#                  default body budget (64 MiB, 8 MiB per principal)
#   churn-token    STREAMS connections sending a body head and 1 byte, then
#   churn-login    stalling, again as soon as the server closes them, at
#                  SHARE_CAP: as one token on /mcp / as sign-in forms with a
#                  forged Origin and CSRF cookie (no credentials)
#   store-one      16 attackers starting URL flows (pending records) as fast
#   store-crowd    as they go, as one name / 1000 made-up names, in a memory
#                  store of STORE_BUDGET (16MiB); 80 legitimate connect_billing
#   costly         COSTLY_N (200) bodies of 88,000 JSON keys and as many plain
#                  bodies of the same size: the server's CPU per body
#   redis-policy   serve on a real redis-server under each maxmemory-policy:
#                  refused or accepted (needs redis-server: tests/need.sh)
#   redis-evict    200 completed deployments on a Redis with maxmemory 8mb and
#                  maxmemory-policy EVICT_POLICY (allkeys-random),
#                  EVICT_JUNK_MB (10) MiB of other keys written while
#                  others keep completing requests, the 200 final
#                  retries again: how many deployed twice (a server that
#                  refuses the Redis runs nothing: it says so)
#
# Bounds: ATTACK_SECS (30) and BASELINE_SECS (10) for slowloris; MAX_MIN (60)
# minutes per forget part; every driver run is also under `timeout`.
# Results: reports/abuse-<UTC time>/ (one JSON per part, summary.md, logs).
set -euo pipefail
cd "$(dirname "$0")/.."
. loadtests/lib/listening.sh
BIN=${BIN:-target/release/elicitkit}
DRIVER=${DRIVER:-target/release/examples/abuse}
PARTS=${PARTS:-slowloris,slow-bodies,retries,forget-memory,forget-sqlite}
SHARE_PARTS=streams-one,streams-crowd,budget,churn-token,churn-login,store-one,store-crowd,costly,redis-policy,redis-evict
PARTS=${PARTS//shares/$SHARE_PARTS}
CONNS=${CONNS:-4000}
SLOW_CAP=${SLOW_CAP:-3840}
LEGIT=${LEGIT:-80}
SLOW_TOKEN=${SLOW_TOKEN:-}
SLOW_BURST=${SLOW_BURST:-0}
BASELINE_SECS=${BASELINE_SECS:-10}
ATTACK_SECS=${ATTACK_SECS:-30}
RETRIES=${RETRIES:-1000}
FLOWS=${FLOWS:-1000000}
LEGACY=${LEGACY:-1000000}
CONCURRENCY=${CONCURRENCY:-16}
# Operations per second for the forget parts (0: as fast as they go). The
# live set is rate x (TTL + RETENTION), so memory is flat only at a steady
# rate: on a shared machine, pace below what it sustains.
RATE=${RATE:-0}
MAX_MIN=${MAX_MIN:-60}
SHARE_CAP=${SHARE_CAP:-300}
STREAMS=${STREAMS:-400}
STORE_BUDGET=${STORE_BUDGET:-16MiB}
COSTLY_N=${COSTLY_N:-200}
EVICT_JUNK_MB=${EVICT_JUNK_MB:-10}
EVICT_POLICY=${EVICT_POLICY:-allkeys-random}
# Short lifetimes so the first retention window ends early: a flow's
# records live TTL + RETENTION, completion records TTL + 10 s.
TTL=${TTL:-30s}
RETENTION=${RETENTION:-30s}
SWEEP=${SWEEP:-5s}
WINDOW=${WINDOW:-90s}
# The attack holds CONNS sockets in the driver and as many in the server:
# raise the soft descriptor limit (inherited by both) towards the hard one.
need_fds=$((CONNS * 2 + 1024))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need_fds" ]; then
  hard=$(ulimit -Hn)
  if [ "$hard" = unlimited ] || [ "$hard" -ge "$need_fds" ]; then ulimit -n "$need_fds"; else ulimit -n "$hard"; fi
  echo "ulimit -n raised to $(ulimit -n) (want $need_fds for CONNS=$CONNS)"
fi
for f in "$BIN" "$DRIVER"; do
  [ -x "$f" ] || { echo "$f not built: cargo build --release --bin elicitkit --example abuse" >&2; exit 2; }
done

out="reports/abuse-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
shm_dir=""
srv_pid=""
redis_pid=""
cleanup() {
  if [ -n "$srv_pid" ]; then kill "$srv_pid" 2>/dev/null || true; wait "$srv_pid" 2>/dev/null || true; fi
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
  [ -n "$shm_dir" ] && rm -rf "$shm_dir"
  return 0
}
trap cleanup EXIT INT TERM

# start_server NAME ARGS... : starts `serve` on 127.0.0.1, sets srv_pid and base.
start_server() {
  local name=$1; shift
  "$BIN" serve --listen 127.0.0.1:0 "$@" >"$out/$name.stdout" 2>"$out/$name.log" &
  srv_pid=$!
  base=$(listening_url "$out/$name.stdout" "$srv_pid") || { echo "server $name: see $out/$name.log" >&2; exit 1; }
  echo "== $name: $BIN serve --listen 127.0.0.1:0 $* (pid $srv_pid, $base)"
}

stop_server() {
  kill "$srv_pid" 2>/dev/null || true
  wait "$srv_pid" 2>/dev/null || true
  srv_pid=""
}

# start_redis NAME ARGS... : a private redis-server on a free loopback port
# (append-only file), files under $out/NAME; sets redis_pid and redis_url.
start_redis() {
  local name=$1; shift
  tests/need.sh redis-server >/dev/null
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  local dir="$PWD/$out/$name"
  mkdir -p "$dir"
  redis-server --bind 127.0.0.1 --port "$port" --appendonly yes --appendfsync everysec \
    --dir "$dir" --logfile "$dir/redis.log" --daemonize no "$@" >/dev/null 2>&1 &
  redis_pid=$!
  for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),1)" 2>/dev/null && break
    kill -0 "$redis_pid" 2>/dev/null || { echo "redis-server $name did not start: see $dir/redis.log" >&2; exit 1; }
    sleep 0.1
  done
  redis_url="redis://127.0.0.1:$port/0"
}

stop_redis() {
  kill "$redis_pid" 2>/dev/null || true
  wait "$redis_pid" 2>/dev/null || true
  redis_pid=""
}

# Runs the driver MODE with ARGS against the server (pid and base set),
# writing $out/PART.json, then stops the server and summarizes.
drive() {
  local part=$1 mode=$2; shift 2
  timeout 300 "$DRIVER" "$mode" --target "$base" --pid "$srv_pid" "$@" --out "$out/$part.json" >/dev/null
  stop_server
  summarize "$part" "$out/$part.json" | tee -a "$out/summary.md"
}

# Writes a one-line JSON field to the summary (python3 reads the JSON).
summarize() { python3 - "$@" <<'PY'
import json, sys
part, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
def lat(x): return f"p50 {x['p50_ms']} ms, p99 {x['p99_ms']} ms, max {x['max_ms']} ms over {x['requests']} requests, {x['errors']} errors"
if part == "slowloris":
    o = d["server_open_connections_during_attack"]
    print(f"- slowloris, {d['attack_connections']} attack connections (server held {o['min']}–{o['max']}, mean {o['mean']:.0f}; attacker connects {d['attacker_connects']}):")
    for phase in ("baseline", "under_attack"):
        p = d[phase]
        print(f"  - {phase}: all {lat(p['all'])}; kept-alive {lat(p['kept_alive'])}; new connection each {lat(p['new_connection_each'])}")
elif part == "slow-bodies":
    r = d["rss_kib"]
    print(f"- slow-bodies, {d['attack_connections']} connections trickling {d['declared_body_bytes']}-byte bodies (token {d['attacker_token']}; attacker connects {d['attacker_connects']}, outcomes {d['attacker_outcomes']}):")
    print(f"  - legitimate: {d['legit_answered']} of {d['legit_sent']} answered ({d['legit_failures']}); {lat(d['legit_latency'])}")
    print(f"  - server RSS: {r['before']} KiB before, {r['peak']} KiB peak, {r['end']} KiB at the end; open connections {d['server_open_connections']}")
elif part in ("streams-one", "streams-crowd", "budget", "churn-token", "churn-login", "store-one", "store-crowd"):
    r = d["rss_kib"]
    what = {"streams-one": f"{d.get('attack_streams')} waiting streams of one token",
            "streams-crowd": f"{d.get('attack_streams')} waiting streams of {d.get('attacker_names')} made-up names",
            "budget": f"{d.get('attack_connections')} stalled 1 MiB bodies of {d.get('attacker_token')}",
            "churn-token": f"{d.get('attack_connections')} churning bodies of {d.get('attacker_token')}",
            "churn-login": f"{d.get('attack_connections')} churning sign-in bodies without credentials",
            "store-one": f"{d.get('attacker_concurrency')} attackers filling the store as one name",
            "store-crowd": f"{d.get('attacker_concurrency')} attackers filling the store as {d.get('attacker_names')} made-up names"}[part]
    print(f"- {part}, {what}: legitimate {d['legit_answered']} of {d['legit_sent']} answered ({d['legit_failures']}); {lat(d['legit_latency'])}")
    print(f"  - attackers: {d.get('attacker_outcomes')}; server RSS {r['before']} KiB before, {r['peak']} KiB peak, {r['end']} KiB at the end")
    if d.get("server_connections"): print(f"  - connections: {d['server_connections']}")
    if d.get("store"): print(f"  - store: {d['store']}")
elif part == "costly":
    b = d["bodies"]
    print(f"- costly: server CPU per body {b['keys']['server_cpu_us_per_body']} us with {d['keys']} keys ({b['keys']['body_bytes']} B, statuses {b['keys']['statuses']}) vs {b['plain']['server_cpu_us_per_body']} us plain ({b['plain']['body_bytes']} B, statuses {b['plain']['statuses']}): {d['cpu_keys_over_plain']}x")
elif part == "redis-evict":
    if d.get("refused"):
        print(f"- redis-evict: serve refused the evicting Redis at start: {d['refused']}")
    else:
        print(f"- redis-evict: {d['completed']} completed deployments, Redis evicted {d['redis_evicted_keys']} keys; final retries again: {d['retries']}; deployed again: {d['deployed_again']}")
elif part.startswith("retries"):
    for t in d["tools"]:
        print(f"- {part} {t['tool']}: {t['retries']} retries → {t['completed']} completed, {t['repeats_with_outcome']} repeats with the outcome, {t['other']} other; side effects {t['side_effects']}; identical outcomes {t['identical_outcomes']}; {t['wall_s']:.2f} s")
else:
    r, f = d["rss_after_window"], d["db_after_window"]
    # A slip under a second is a hiccup; more means the rate was not held.
    slip_s = d.get('schedule_slip_s') or 0
    slip = f"; the schedule slipped {slip_s:.1f} s" if slip_s >= 0.05 else ""
    if slip_s >= 1: slip += " (the machine was too busy for the rate)"
    print(f"- {part}: {d['url_flows']} URL flows + {d['legacy_calls']} legacy calls ({d['failed']} failed) in {d['elapsed_s']:.0f} s ({d['ops_per_s']:.0f}/s){slip}{' — stopped by MAX_MIN' if d['stopped_by_max_time'] else ''}")
    def band(x, unit):
        return (f"{x['at_window_end']} → {x['last']} {unit} (min {x['min']}, max {x['max']}, max/min {x['max_over_min']}, within 10 %: {x['within_10_percent']}); "
                f"last-minute mean / first-minute mean {x['growth']} (grew over 10 %: {x['grew_over_10_percent']})")
    if r: print(f"  - RSS after the {d['window_s']} s window: {band(r, 'KiB')}")
    if f: print(f"  - SQLite file+WAL after the window: {band(f, 'bytes')}")
    # The live set the store holds: flat memory needs a flat live set.
    for key, name in (("live_records_after_window", "live records"), ("live_claims_after_window", "live claims"),
                      ("rss_bytes_per_live_item_after_window", "RSS bytes per live record or claim")):
        if d.get(key): print(f"  - {name} after the window: {band(d[key], '')}")
PY
}

echo "# abuse benchmark $(date -u +%FT%TZ) on $(nproc) cores, ulimit -n $(ulimit -n)" >"$out/summary.md"
IFS=',' read -ra parts <<<"$PARTS"
for part in "${parts[@]}"; do
  case "$part" in
    slowloris)
      start_server slowloris --workers 2
      timeout $((BASELINE_SECS + ATTACK_SECS + 120)) "$DRIVER" slowloris --target "$base" --conns "$CONNS" \
        --baseline "${BASELINE_SECS}s" --attack "${ATTACK_SECS}s" --out "$out/slowloris.json" >/dev/null
      stop_server
      summarize slowloris "$out/slowloris.json" | tee -a "$out/summary.md"
      ;;
    slow-bodies)
      start_server slow-bodies --workers 2 --max-connections "$SLOW_CAP"
      timeout $((ATTACK_SECS + 120)) "$DRIVER" slow-bodies --target "$base" --pid "$srv_pid" --conns "$CONNS" \
        --legit "$LEGIT" --burst "$SLOW_BURST" ${SLOW_TOKEN:+--token "$SLOW_TOKEN"} \
        --out "$out/slow-bodies.json" >/dev/null
      stop_server
      summarize slow-bodies "$out/slow-bodies.json" | tee -a "$out/summary.md"
      ;;
    retries)
      for store in memory sqlite; do
        if [ "$store" = sqlite ]; then spec="sqlite:$out/retries.db"; else spec=memory; fi
        start_server "retries-$store" --store "$spec"
        timeout 600 "$DRIVER" retries --target "$base" --n "$RETRIES" --out "$out/retries-$store.json" >/dev/null
        stop_server
        summarize "retries-$store" "$out/retries-$store.json" | tee -a "$out/summary.md"
      done
      rm -f "$out"/retries.db*
      ;;
    forget-memory|forget-sqlite)
      db_args=()
      spec=memory
      if [ "$part" = forget-sqlite ]; then
        if [ -d /dev/shm ]; then shm_dir=$(mktemp -d /dev/shm/elicitkit-abuse.XXXXXX); db="$shm_dir/forget.db"; else db="$out/forget.db"; fi
        spec="sqlite:$db"
        db_args=(--db "$db")
      fi
      start_server "$part" --store "$spec" --state-ttl "$TTL" --retention "$RETENTION" \
        --sweep-interval "$SWEEP" --elicitation-timeout "$TTL"
      timeout $((MAX_MIN * 60 + 120)) "$DRIVER" forget --target "$base" --pid "$srv_pid" "${db_args[@]}" \
        --flows "$FLOWS" --legacy "$LEGACY" --concurrency "$CONCURRENCY" --rate "$RATE" --window "$WINDOW" \
        --max-time "${MAX_MIN}m" --out "$out/$part.json" >/dev/null
      stop_server
      if [ -n "$shm_dir" ]; then rm -rf "$shm_dir"; shm_dir=""; fi
      summarize "$part" "$out/$part.json" | tee -a "$out/summary.md"
      ;;
    streams-one|streams-crowd)
      tokens=1; [ "$part" = streams-crowd ] && tokens=$STREAMS
      start_server "$part" --workers 2 --max-connections "$SHARE_CAP"
      drive "$part" streams --conns "$STREAMS" --tokens "$tokens" --legit "$LEGIT"
      ;;
    budget)
      start_server budget --workers 2
      drive budget slow-bodies --conns 72 --tokens 9 --declared 1048575 --burst 1048574 \
        --reconnect-after 0s --legit "$LEGIT"
      ;;
    churn-token|churn-login)
      who=(--token mallory); [ "$part" = churn-login ] && who=(--login)
      declared=1048575; [ "$part" = churn-login ] && declared=16000
      start_server "$part" --workers 2 --max-connections "$SHARE_CAP"
      drive "$part" slow-bodies --conns "$STREAMS" "${who[@]}" --declared "$declared" --burst 1 \
        --reconnect-after 0s --legit "$LEGIT"
      ;;
    store-one|store-crowd)
      tokens=1; [ "$part" = store-crowd ] && tokens=1000
      start_server "$part" --workers 2 --store-memory-budget "$STORE_BUDGET"
      drive "$part" store --tokens "$tokens" --concurrency 16 --fill 15s --legit "$LEGIT"
      ;;
    costly)
      start_server costly --workers 2
      drive costly costly --n "$COSTLY_N"
      ;;
    redis-policy)
      : >"$out/redis-policy.txt"
      for policy in allkeys-lru allkeys-lfu allkeys-random volatile-lru volatile-lfu volatile-random volatile-ttl noeviction; do
        start_redis "redis-$policy" --maxmemory-policy "$policy"
        "$BIN" serve --listen 127.0.0.1:0 --store "$redis_url" >"$out/redis-$policy/serve.out" 2>"$out/redis-$policy/serve.log" &
        pid=$!
        verdict=""
        for _ in $(seq 50); do
          if ! kill -0 "$pid" 2>/dev/null; then wait "$pid" && rc=0 || rc=$?; verdict="refused (exit $rc): $(grep -o 'maxmemory-policy [a-z-]* lets Redis evict any key' "$out/redis-$policy/serve.log" | head -1 || true)"; break; fi
          if grep -q '^listening on' "$out/redis-$policy/serve.out"; then verdict="accepted"; break; fi
          sleep 0.1
        done
        kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
        stop_redis
        echo "  - maxmemory-policy $policy: ${verdict:-no answer in 5 s}" | tee -a "$out/redis-policy.txt"
      done
      { echo "- redis-policy ($BIN):"; cat "$out/redis-policy.txt"; } >>"$out/summary.md"
      ;;
    redis-evict)
      start_redis redis-evict --maxmemory 8mb --maxmemory-policy "$EVICT_POLICY"
      "$BIN" serve --listen 127.0.0.1:0 --store "$redis_url" --workers 2 >"$out/redis-evict.stdout" 2>"$out/redis-evict.log" &
      srv_pid=$!
      if base=$(listening_url "$out/redis-evict.stdout" "$srv_pid" 2>/dev/null); then
        # This build took an evicting Redis without being told to.
        timeout 600 "$DRIVER" evict --target "$base" --redis "$redis_url" --junk-mb "$EVICT_JUNK_MB" --out "$out/redis-evict.json" >/dev/null
        stop_server
      else
        wait "$srv_pid" 2>/dev/null || true
        srv_pid=""
        reason=$(grep -o 'maxmemory-policy [a-z-]* lets Redis evict any key' "$out/redis-evict.log" | head -1 || true)
        python3 -c 'import json,sys; json.dump({"refused": sys.argv[1]}, open(sys.argv[2], "w"))' "$reason" "$out/redis-evict.json"
      fi
      stop_redis
      summarize redis-evict "$out/redis-evict.json" | tee -a "$out/summary.md"
      ;;
    *) echo "unknown part $part (slowloris, slow-bodies, retries, forget-memory, forget-sqlite, $SHARE_PARTS, or shares)" >&2; exit 2 ;;
  esac
done
echo "results in $out/"
