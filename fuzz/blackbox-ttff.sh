#!/usr/bin/env bash
# Time to first finding of `elicitkit fuzz` against `elicitkit serve` and
# each flaw a fuzz oracle can see, on 127.0.0.1. Prints one line per server:
# flaw, first finding's oracle, seconds to it (from summary.json), execs/s.
# Usage: fuzz/blackbox-ttff.sh [DURATION] [SEED]   (from the repository root)
set -euo pipefail
DURATION=${1:-60s}
SEED=${2:-1}
BIN=${BIN:-target/debug/elicitkit}
OUT=$(mktemp -d)
FLAWS=${FLAWS:-"none accept-tampered-state ignore-request-binding ignore-principal replayable-side-effect url-to-form-client elicit-without-capability input-required-on-list input-required-on-other-lists crash-on-decline hang-on-cancel"}
printf '%-24s %-28s %10s %10s %8s\n' flaw first-finding seconds exec/s findings
for flaw in $FLAWS; do
  args=(serve --listen 127.0.0.1:0)
  [ "$flaw" != none ] && args+=(--flaw "$flaw")
  "$BIN" "${args[@]}" > "$OUT/$flaw.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do grep -qs 'listening on' "$OUT/$flaw.log" && break; sleep 0.1; done
  url=$(grep -o 'listening on http://[^ ]*' "$OUT/$flaw.log" | head -1 | cut -d' ' -f3)/mcp
  "$BIN" fuzz --target "$url" --duration "$DURATION" --seed "$SEED" --quiet \
    --out "$OUT" --run-id "$flaw" > "$OUT/$flaw.fuzz" 2>&1 || true
  kill "$pid"; wait "$pid" 2>/dev/null || true
  python3 - "$OUT/$flaw/fuzz/summary.json" "$flaw" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
f = sorted(s["findings"], key=lambda f: f["at_secs"])
first = f[0]["oracle"] if f else "-"
secs = "%.2f" % f[0]["at_secs"] if f else "-"
print("%-24s %-28s %10s %10.1f %8d" % (sys.argv[2], first, secs, s["execs_per_sec"], len(f)))
PY
done
echo "reports in $OUT"
