#!/usr/bin/env bash
# Reclaim benchmark: the cost per lock of `locksmith --scan --reclaim` on trees of 1,000, 10,000
# and 100,000 stale pid files (a dead PID each, 1,000 per directory).
#
# Each run builds a fresh tree, times `locksmith --scan --json TREE` (the scan alone, nothing
# removed) and then `locksmith --scan --reclaim --json TREE` (the same scan, then every lock
# judged again, moved aside, checked, copied, journaled and removed); the cost per lock is the
# difference divided by the number of locks, in elapsed time and in CPU time (user + system,
# which a busy machine disturbs less). Prints the medians over the runs for each size, and
# fails if a lock is left or the reclaim did not exit 0.
#
# By default the tree and the state directory are on tmpfs (/dev/shm), so that the figure is
# reclaim's own work: on a disk, making each copy and journal line durable (fsync) before the
# removal adds the disk's sync latency per lock. Use --dir to measure on another file system.
#
# usage: benches/reclaim.sh [--bin PATH] [--runs N] [--sizes "1000 10000 100000"] [--dir DIR]
# Needs: python3, GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=""
runs=3
sizes="1000 10000 100000"
base=/dev/shm
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --dir) base=$2; shift 2 ;;
    *) echo "usage: $0 [--bin PATH] [--runs N] [--sizes \"1000 10000 100000\"] [--dir DIR]" >&2; exit 2 ;;
  esac
done
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=$PWD/target/release/locksmith
fi
for tool in python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install python3 time)" >&2; exit 2; }
done

work=$(mktemp -d "$base/locksmith-reclaim-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A PID that names no process: a child that has exited.
true & dead=$!
wait "$dead"

make_tree() { # DIR COUNT
  python3 - "$1" "$2" "$dead" <<'EOF'
import os, sys
root, n, dead = sys.argv[1], int(sys.argv[2]), sys.argv[3]
content = (dead + "\n").encode()
for i in range(n):
    d = os.path.join(root, "d%04d" % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(d)
    fd = os.open(os.path.join(d, "job%06d.pid" % i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, content)
    os.close(fd)
EOF
}

# Runs locksmith ARGS..., appending "elapsed cpu" (seconds) to $work/times.
timed() {
  local code=0
  /usr/bin/time -f "%e %U %S" -o "$work/t" "$bin" "$@" >"$work/out.json" || code=$?
  tail -1 "$work/t" | awk '{ printf "%s %.3f\n", $1, $2 + $3 }' >>"$work/times"
  return $code
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "binary: $bin"
echo "file system: $(stat -f -c %T "$work")"
for n in $sizes; do
  wall=()
  cpu=()
  for r in $(seq "$runs"); do
    tree=$work/tree
    rm -rf "$tree" "$work/state" "$work/times"
    make_tree "$tree" "$n"
    export XDG_STATE_HOME=$work/state
    timed --scan --json "$tree" || true
    code=0
    timed --scan --reclaim --json "$tree" || code=$?
    left=$(find "$tree" -name '*.pid' | wc -l)
    if [ "$code" != 0 ] || [ "$left" != 0 ]; then
      echo "reclaim of $n locks: exit $code, $left locks left" >&2
      exit 1
    fi
    read -r w cw < <(awk -v n="$n" 'NR == 1 { w = $1; c = $2 } NR == 2 {
      printf "%.1f %.1f\n", ($1 - w) / n * 1e6, ($2 - c) / n * 1e6 }' "$work/times")
    echo "  $n locks, run $r: scan $(head -1 "$work/times"), scan + reclaim $(tail -1 "$work/times") (elapsed, cpu s): ${w} µs elapsed, ${cw} µs cpu per lock"
    wall+=("$w")
    cpu+=("$cw")
  done
  mw=$(printf '%s\n' "${wall[@]}" | median)
  mc=$(printf '%s\n' "${cpu[@]}" | median)
  echo "$n locks: median ${mw} µs elapsed, ${mc} µs cpu per lock reclaimed ($runs runs)"
done
