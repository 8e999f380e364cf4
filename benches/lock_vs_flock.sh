#!/usr/bin/env bash
# Whole-command comparison: `locksmith lock L -- true` against `flock L true` (util-linux),
# uncontended, with hyperfine, on the local file system. Builds the release binary first.
#
#   benches/lock_vs_flock.sh [RUNS]
#
# Prints hyperfine's table, then both medians and their ratio (target: within 1.5x of flock).
set -euo pipefail

runs="${1:-1000}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build --release --quiet
bin="$root/target/release/locksmith"

for tool in hyperfine flock jq; do
    command -v "$tool" >/dev/null || { echo "lock_vs_flock.sh: $tool is not installed" >&2; exit 2; }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/locksmith-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
json="$work/result.json"

hyperfine --shell=none --warmup 100 --runs "$runs" --export-json "$json" \
    --command-name "locksmith lock" "$bin lock $work/a.lock -- true" \
    --command-name "flock" "flock $work/b.lock true"

median() { jq -r --arg n "$1" '.results[] | select(.command == $n) | .median' "$json"; }
ours="$(median "locksmith lock")"
theirs="$(median "flock")"
awk -v a="$ours" -v b="$theirs" 'BEGIN {
    printf "median: locksmith lock %.3f ms, flock %.3f ms, ratio %.2fx (target <= 1.5x)\n", a * 1000, b * 1000, a / b
}'
