#!/usr/bin/env bash
# What `elicitkit serve` keeps per completed round trip, by flow kind: the
# slope of its RSS over a second load run, after a first one has grown the
# allocator and the tables' first doublings. One server per kind
# (`--workers 1`, the memory store, default TTL and retention, so nothing
# completed is purged within the run), driven by `elicitkit load`.
#
#   cargo build --release --bin elicitkit
#   loadtests/memory.sh
#   KINDS="form url legacy" USERS=16 FIRST=10s SECOND=30s loadtests/memory.sh
#
# Kinds: form (deploy, one round), multi (book_trip, several rounds), url
# (connect_billing: the page, its browser session), decline, tamper, replay
# (delete_file, single use), legacy (2025-11-25 deploy, a session per round
# trip), legacy-url (2025-11-25 connect_billing), mix (the plan `load
# --target` discovers). Prints a table: round trips in the second run (the
# load's count in its window, and the completions the server recorded, one
# claim each: the divisor), RSS before/after it, RSS bytes per completed
# round trip and the store's records per completed round trip, then what
# /stats says the store holds by kind and its bytes each.
set -euo pipefail
cd "$(dirname "$0")/.."
. loadtests/lib/listening.sh
BIN=${BIN:-target/release/elicitkit}
KINDS=${KINDS:-form multi url decline tamper replay legacy legacy-url mix}
USERS=${USERS:-16}
FIRST=${FIRST:-10s}
SECOND=${SECOND:-30s}
TOKEN=ek-memory-probe
[ -x "$BIN" ] || { echo "$BIN not found: cargo build --release --bin elicitkit" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is needed to read the summaries" >&2; exit 2; }
out="$(mktemp -d)"
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$out"' EXIT

plan() { # kind: a plan of that one flow kind (none for mix: discovered)
  local kind tool args gen=
  case $1 in
    form) kind=form-accept tool=deploy args='{ service = "web" }' ;;
    multi) kind=form-accept tool=book_trip args='{ from = "AMS", to = "LIS" }' ;;
    url) kind=url-flow tool=connect_billing args='{}' ;;
    decline) kind=form-decline tool=deploy args='{ service = "web" }' ;;
    tamper) kind=tamper tool=deploy args='{ service = "web" }' ;;
    replay) kind=replay tool=delete_file args='{ path = "a.txt" }' ;;
    legacy) kind=form-accept tool=deploy args='{ service = "web" }' gen=2025-11-25 ;;
    legacy-url) kind=url-flow tool=connect_billing args='{}' gen=2025-11-25 ;;
    *) echo "unknown kind $1 (form multi url decline tamper replay legacy legacy-url mix)" >&2; exit 2 ;;
  esac
  printf 'name = "memory-%s"\ntimeout = "5s"\n[scenarios.%s]\nkind = "%s"\ntool = "%s"\narguments = %s\n' \
    "$1" "$1" "$kind" "$tool" "$args"
  [ -z "$gen" ] || printf 'generation = "%s"\n' "$gen"
}

rss() { awk '/^VmRSS/ {print $2 * 1024}' "/proc/$srv/status"; }
stats() { curl -sf -H "Authorization: Bearer $TOKEN" "${url%/mcp}/stats"; }

load() { # kind duration folder: one load run; prints its round trips
  local args=(--target "$url" --users "$USERS" --duration "$2" --out "$out/$3")
  [ "$1" = mix ] || args+=(--plan "$out/$1.toml")
  "$BIN" load "${args[@]}" >"$out/$3.log" 2>&1 || true
  python3 - "$out/$3" <<'EOF'
import glob, json, sys
s = json.load(open(glob.glob(sys.argv[1] + "/*/summary.json")[0]))
rt = s["round_trips"]
print(rt["total"] - rt["unexpected"] - rt["skipped"])
EOF
}

held='
import json, sys
m = json.load(sys.stdin).get("memory") or {}
kinds = ("form_records", "url_records", "claims")
print("    held (count x bytes each):", ", ".join(
    "%s %d x %s" % (k, m[k]["count"], m[k]["bytes_each"]) for k in kinds if k in m)
    + (", claims kept in records %d" % m["claims_in_records"] if "claims_in_records" in m else ""))
'

store_counts() { # /stats JSON on stdin: "records claims"
  python3 -c 'import json,sys; s=json.load(sys.stdin)["store"]; print(s["created"], s["claims_won"])'
}

printf '%-11s %10s %10s %9s %9s %9s %8s\n' kind load_rts completed rss_MiB_0 rss_MiB_1 B/rt rec/rt
for k in $KINDS; do
  [ "$k" = mix ] || plan "$k" >"$out/$k.toml"
  RUST_LOG=warn "$BIN" serve --listen 127.0.0.1:0 --workers 1 >"$out/srv.out" 2>"$out/srv.err" &
  srv=$!
  url=$(listening_url "$out/srv.out" "$srv") || { echo "serve did not start:" >&2; cat "$out/srv.err" >&2; exit 1; }
  case $url in */mcp) ;; *) url="$url/mcp" ;; esac
  load "$k" "$FIRST" "$k-1" >/dev/null
  read -r rec0 cl0 < <(stats | store_counts)
  r0=$(rss)
  n=$(load "$k" "$SECOND" "$k-2")
  r1=$(rss)
  read -r rec1 cl1 < <(stats | store_counts)
  python3 - "$k" "$n" "$r0" "$r1" "$rec0" "$rec1" "$cl0" "$cl1" <<'EOF'
import sys
k, n, r0, r1, a0, a1, c0, c1 = sys.argv[1], *map(int, sys.argv[2:])
# Completed round trips as the server counts them (one claim each), where
# there are claims: the load's count covers its measured window only, not
# the users' launch and wind-down, which the RSS also holds.
done = c1 - c0 if c1 > c0 else n
per = lambda x: x / done if done else float("nan")
print(f"{k:<11} {n:>10} {done:>10} {r0/2**20:>9.1f} {r1/2**20:>9.1f} {per(r1-r0):>9.0f} {per(a1-a0):>8.2f}")
EOF
  stats | python3 -c "$held"
  kill "$srv"; wait "$srv" 2>/dev/null || true; srv=
done
