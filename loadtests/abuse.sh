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
# Bounds: ATTACK_SECS (30) and BASELINE_SECS (10) for slowloris; MAX_MIN (60)
# minutes per forget part; every driver run is also under `timeout`.
# Results: reports/abuse-<UTC time>/ (one JSON per part, summary.md, logs).
set -euo pipefail
cd "$(dirname "$0")/.."
. loadtests/lib/listening.sh
BIN=${BIN:-target/release/elicitkit}
DRIVER=${DRIVER:-target/release/examples/abuse}
PARTS=${PARTS:-slowloris,slow-bodies,retries,forget-memory,forget-sqlite}
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
cleanup() {
  if [ -n "$srv_pid" ]; then kill "$srv_pid" 2>/dev/null || true; wait "$srv_pid" 2>/dev/null || true; fi
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
    *) echo "unknown part $part (slowloris, slow-bodies, retries, forget-memory, forget-sqlite)" >&2; exit 2 ;;
  esac
done
echo "results in $out/"
