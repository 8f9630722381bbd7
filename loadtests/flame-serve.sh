#!/usr/bin/env bash
# A flame graph of `elicitkit serve` under MRTR form round trips (`deploy`,
# the form-accept flow), the server on one core and the driver on the other,
# sampled by perf with DWARF call stacks, drawn by inferno.
#
#   cargo build --release && cargo install inferno && loadtests/flame-serve.sh
#   USERS=64 SECS=10 OUT=serve.svg loadtests/flame-serve.sh
#
# USERS (default 16), SECS (default 8), OUT (default serve-flame.svg), and
# FOLDED (default: OUT with .folded) keeps the collapsed stacks for grep.
set -euo pipefail
cd "$(dirname "$0")/.."
. loadtests/lib/listening.sh
BIN=${BIN:-target/release/elicitkit}
USERS=${USERS:-16}
SECS=${SECS:-8}
OUT=${OUT:-serve-flame.svg}
FOLDED=${FOLDED:-${OUT%.svg}.folded}
for t in perf inferno-collapse-perf inferno-flamegraph; do
  command -v "$t" >/dev/null || { echo "$t not found (perf: linux-tools; inferno: cargo install inferno)" >&2; exit 2; }
done
[ -x "$BIN" ] || { echo "$BIN not found: cargo build --release" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/plan.toml" <<'EOF'
name = "flame"
timeout = "5s"
[scenarios.form-accept]
kind = "form-accept"
tool = "deploy"
arguments = { service = "web" }
EOF
RUST_LOG=warn taskset -c 0 perf record -q -F 997 --call-graph dwarf,16384 -o "$work/perf.data" -- \
  "$BIN" serve --listen 127.0.0.1:0 --workers 1 >"$work/serve.out" 2>/dev/null &
rec=$!
url="$(listening_url "$work/serve.out" "$rec")/mcp" || { kill "$rec" 2>/dev/null; exit 1; }
taskset -c 1 "$BIN" load --plan "$work/plan.toml" --target "$url" --users "$USERS" \
  --duration "${SECS}s" --out "$work" --run-id flame --quiet >/dev/null || true
# The server is perf's child; perf writes its data when the server ends.
pkill -INT -P "$rec" || true
wait "$rec" 2>/dev/null || true
perf script -i "$work/perf.data" 2>/dev/null | inferno-collapse-perf >"$FOLDED"
inferno-flamegraph --title "elicitkit serve: MRTR form round trips, $USERS users" <"$FOLDED" >"$OUT"
echo "flame graph: $OUT (stacks: $FOLDED)"
