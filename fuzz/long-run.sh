#!/usr/bin/env bash
# Long clean runs of every cargo-fuzz target, then corpus minimisation.
#
#   fuzz/long-run.sh            # every target, 600 s each, 2 at a time
#   SECONDS_EACH=60 JOBS=1 TARGETS="state_open headers" fuzz/long-run.sh
#   MINIMISE=0 fuzz/long-run.sh # runs only, committed corpora untouched
#
# Each target starts from its committed corpus; new inputs go to a scratch
# corpus so a failed run changes nothing. After a clean run (libFuzzer exit
# 0: no crash, leak, timeout or OOM) and with MINIMISE=1 (default), the
# committed corpus is replaced by `cargo fuzz cmin` over committed + new
# inputs. One line per target is appended to RESULTS (execs, exec/s,
# coverage, features, corpus sizes) and the full logs are kept beside it.
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_EACH=${SECONDS_EACH:-600}
JOBS=${JOBS:-2}
MINIMISE=${MINIMISE:-1}
TARGETS=${TARGETS:-$(cargo +nightly fuzz list)}
OUT=${OUT:-$(mktemp -d /tmp/elicitkit-fuzz-long.XXXXXX)}
RESULTS="$OUT/results.tsv"
mkdir -p "$OUT"
cargo +nightly fuzz build
printf 'target\tstatus\tseconds\texecs\texec_per_s\tcov\tft\tcorpus_before\tcorpus_after\n' >"$RESULTS"

run_one() {
  local t=$1 scratch="$OUT/new/$1" log="$OUT/$1.log" dict=()
  mkdir -p "$scratch"
  [ -f "dict/$t.dict" ] && dict=("-dict=dict/$t.dict")
  local before status=clean
  before=$(find "corpus/$t" -type f | wc -l)
  if ! cargo +nightly fuzz run "$t" "$scratch" "corpus/$t" -- \
    -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=60 \
    -print_final_stats=1 ${dict[@]+"${dict[@]}"} >"$log" 2>&1; then
    status=FAILED
  fi
  # libFuzzer's final stats and its last status line.
  local execs rate cov ft
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  local after=$before
  if [ "$status" = clean ] && [ "$MINIMISE" = 1 ]; then
    # cmin minimises committed + new inputs in place in the scratch
    # folder, which then replaces the committed corpus.
    cp -n "corpus/$t"/* "$scratch"/ 2>/dev/null || true
    if cargo +nightly fuzz cmin "$t" "$scratch" -- -rss_limit_mb=2048 -timeout=60 \
      >"$OUT/$t.cmin.log" 2>&1 && [ -n "$(ls -A "$scratch")" ]; then
      rm -rf "corpus/$t" && mkdir -p "corpus/$t" && cp "$scratch"/* "corpus/$t"/
      after=$(find "corpus/$t" -type f | wc -l)
    else
      status="clean, cmin failed"
    fi
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$status" "$SECONDS_EACH" \
    "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$before" "$after" >>"$RESULTS"
  echo "$(date +%T) $t: $status (execs ${execs:-?}, ${rate:-?}/s, cov ${cov:-?}, corpus $before -> $after)"
}

running=0
for t in $TARGETS; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
done
wait
column -t -s $'\t' "$RESULTS"
echo "logs and results in $OUT"
! grep -q FAILED "$RESULTS"
