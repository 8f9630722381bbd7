#!/usr/bin/env bash
# Does `elicitkit serve`, on default settings, hold its own peak rate for 20
# minutes without its memory budget refusing anything? Measures the peak
# (closed model, the discovered mix `load --target` runs), then offers that
# rate in the open model for DURATION and reports what the store held
# (/stats memory) and any round trip refused as "store is full".
#
#   cargo build --release --bin elicitkit
#   loadtests/budget-soak.sh                   # 20 minutes
#   DURATION=2m PEAK_USERS=32 loadtests/budget-soak.sh
#
# The records of the first minutes are still held at the end (a URL flow's
# for the state TTL plus --retention, 20 minutes by default), so the run
# sees the store at its fullest. Exit 0 when nothing was refused for the
# budget, 1 otherwise, 2 when it could not run.
set -euo pipefail
cd "$(dirname "$0")/.."
. loadtests/lib/listening.sh
BIN=${BIN:-target/release/elicitkit}
DURATION=${DURATION:-20m}
PEAK_USERS=${PEAK_USERS:-32}
PEAK_FOR=${PEAK_FOR:-15s}
SHARE=${SHARE:-1.0}
[ -x "$BIN" ] || { echo "$BIN not found: cargo build --release --bin elicitkit" >&2; exit 2; }
out="$(mktemp -d)"
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; echo "reports kept in $out" >&2' EXIT
secs=$(python3 -c "
import re, sys
m = re.fullmatch(r'(\d+)([smh])', sys.argv[1]) or sys.exit('DURATION: N followed by s, m or h')
print(int(m[1]) * {'s': 1, 'm': 60, 'h': 3600}[m[2]])" "$DURATION")
RUST_LOG=info "$BIN" serve --listen 127.0.0.1:0 >"$out/srv.out" 2>"$out/srv.err" &
srv=$!
url=$(listening_url "$out/srv.out" "$srv") || { cat "$out/srv.err" >&2; exit 2; }
case $url in */mcp) ;; *) url="$url/mcp" ;; esac
grep -o 'the store.s memory budget.*' "$out/srv.err" | head -1 || true

summary() { python3 -c 'import glob,json,sys; print(json.dumps(json.load(open(glob.glob(sys.argv[1]+"/*/summary.json")[0]))))' "$1"; }

"$BIN" load --target "$url" --users "$PEAK_USERS" --duration "$PEAK_FOR" --out "$out/peak" >"$out/peak.log" 2>&1 || true
peak=$(summary "$out/peak" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["rps"]))')
rate=$(python3 -c "print(max(1, round($peak * $SHARE)))")
echo "peak: $peak round trips/s with $PEAK_USERS users; offering $rate/s for $DURATION"
# The request cap is a guard, not the end: room for 8 requests a round trip.
"$BIN" load --target "$url" --rate "$rate" --duration "$DURATION" --max-requests "$((rate * secs * 8))" \
  --out "$out/soak" >"$out/soak.log" 2>&1 && rc=0 || rc=$?
tail -12 "$out/soak.log"
# The server may still be answering the last round trips in flight.
for _ in $(seq 20); do
  curl -sf -H 'Authorization: Bearer ek-budget-probe' "${url%/mcp}/stats" >"$out/stats.json" && break
  sleep 1
done
python3 - "$out/soak" "$out/stats.json" "$rc" <<'EOF'
import glob, json, sys
s = json.load(open(glob.glob(sys.argv[1] + "/*/summary.json")[0]))
stats = json.load(open(sys.argv[2]))
m = stats.get("memory", {})
full = sum(g["count"] for g in s.get("error_groups", []) if "store is full" in g["message"])
rt = s["round_trips"]
print(f"load exit {sys.argv[3]}, verdict {s['verdict']}, ended by {s['ended_by']}: "
      f"{rt['total']} round trips in {s['duration_s']:.0f} s, {s['rps']:.0f}/s achieved, "
      f"{rt['unexpected']} unexpected")
print(f"store held {m.get('held_bytes', 0) / 2**20:.0f} MiB of its "
      f"{(m.get('budget_bytes') or 0) / 2**20:.0f} MiB budget: "
      + ", ".join(f"{k} {m[k]['count']} x {m[k]['bytes_each']} B"
                  for k in ("form_records", "url_records", "claims") if k in m))
print(f"refused for the budget (503 store is full): {full}")
sys.exit(1 if full else 0)
EOF
