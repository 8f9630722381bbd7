#!/usr/bin/env bash
# Runs a plan as N segments of an Indexed Job, all starting at one time,
# then merges their logs. See README.md in this folder.
#
#   loadtests/k8s/submit.sh --plan loadtests/capacity.toml --target URL \
#       --segments 4 [--image REGISTRY/elicitkit:TAG] [--lead 90] [--namespace NS]
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
plan="" target="" segments=3 image="elicitkit:latest" lead=90 ns="" timeout=3600
while [ $# -gt 0 ]; do
    case "$1" in
        --plan) plan="$2"; shift 2 ;;
        --target) target="$2"; shift 2 ;;
        --segments) segments="$2"; shift 2 ;;
        --image) image="$2"; shift 2 ;;
        --lead) lead="$2"; shift 2 ;;
        --namespace) ns="$2"; shift 2 ;;
        --timeout) timeout="$2"; shift 2 ;;
        -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
        *) echo "submit.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$plan" ] && [ -f "$plan" ] || { echo "submit.sh: --plan FILE is required" >&2; exit 2; }
[ -n "$target" ] || { echo "submit.sh: --target URL is required" >&2; exit 2; }
case "$segments" in ''|*[!0-9]*|0) echo "submit.sh: --segments must be a whole number >= 1" >&2; exit 2 ;; esac

k() { if [ -n "$ns" ]; then kubectl -n "$ns" "$@"; else kubectl "$@"; fi; }

# One start time for every pod, computed once here: far enough ahead for the
# pods to be scheduled, pull the image and pass the preflight.
start_at="$(date -u -d "+${lead} seconds" +%Y-%m-%dT%H:%M:%SZ)"
run="$(date -u +%Y%m%dT%H%M%SZ)-seg${segments}"
echo "submit.sh: $segments segments of $plan against $target, start at $start_at, results in /results/$run"

k apply -f "$here/pvc.yaml"
k create configmap elicitkit-plan --from-file=plan.toml="$plan" --dry-run=client -o yaml | k apply -f -
k delete job elicitkit-load elicitkit-merge --ignore-not-found

# Fill in the load Job: N, the start, the target, the run folder, the image.
sed -e "s|^  completions: .*|  completions: $segments|" \
    -e "s|^  parallelism: .*|  parallelism: $segments|" \
    -e "s|elicitkit.dev/start-at: .*|elicitkit.dev/start-at: \"$start_at\"|" \
    -e "/name: SEGMENTS/{n;s|value: .*|value: \"$segments\"|}" \
    -e "/name: START_AT/{n;s|value: .*|value: \"$start_at\"|}" \
    -e "/name: TARGET/{n;s|value: .*|value: \"$target\"|}" \
    -e "/name: RUN/{n;s|value: .*|value: \"$run\"|}" \
    -e "s|image: elicitkit:latest|image: $image|" \
    "$here/job-load.yaml" | k apply -f -

# Wait for every segment to end (complete, or failed: a failed threshold
# exits 1 but still writes its log), then merge what was written.
k wait --for=condition=complete --timeout="${timeout}s" job/elicitkit-load &
ok=$!
k wait --for=condition=failed --timeout="${timeout}s" job/elicitkit-load &
failed=$!
wait -n "$ok" "$failed" || true
kill "$ok" "$failed" 2>/dev/null || true

sed -e "/name: RUN/{n;s|value: .*|value: \"$run\"|}" \
    -e "s|image: elicitkit:latest|image: $image|" \
    "$here/job-merge.yaml" | k apply -f -
k wait --for=condition=complete --timeout=600s job/elicitkit-merge || true
k logs job/elicitkit-merge
echo "submit.sh: merged report in /results/$run/merged on the elicitkit-results volume"
