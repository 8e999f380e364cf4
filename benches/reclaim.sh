#!/usr/bin/env bash
# Reclaim benchmark: `locksmith --scan --reclaim` against its floor, side by side in one run, on
# trees of 10,000 and 100,000 stale pid files (a dead PID each, 1,000 per directory), on a real
# disk and on tmpfs.
#
# For each file system and size, each run builds a fresh tree and times, one after the other:
# - the floor: as many small files created (a 7-byte copy each, in a directory beside the
#   tree) and as many removed (the tree's locks), with one sync (syncfs(2)) between the two,
#   the least any reclaim that copies each lock durably before removing it must do;
# - `locksmith --scan --json TREE` (the scan alone, nothing removed), then, on the same tree,
#   `locksmith --scan --reclaim --json TREE` (the same scan, then every lock judged again,
#   copied, journaled, made durable in groups, moved aside, checked and removed). The reclaim's
#   cost is the difference between the two.
# Prints per lock, for each size, the medians over the runs of the floor, of the reclaim (and of
# the scan + reclaim) and their ratio to the floor, in elapsed time; fails if a lock is left or
# the reclaim did not exit 0.
#
# Goals: the reclaim within 1.5 times its floor on the disk, at most 100 µs per lock on tmpfs.
#
# usage: benches/reclaim.sh [--bin PATH] [--runs N] [--sizes "10000 100000"]
#                           [--disk DIR] [--tmpfs DIR] [--only disk|tmpfs]
#   --disk: a directory on the real disk (default target/reclaim-bench, here ext4)
#   --tmpfs: a directory on tmpfs (default /dev/shm)
# Needs: python3, GNU time (/usr/bin/time). Run it with nice on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=""
runs=3
sizes="10000 100000"
disk=$PWD/target/reclaim-bench
tmpfs=/dev/shm
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --disk) disk=$2; shift 2 ;;
    --tmpfs) tmpfs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "usage: $0 [--bin PATH] [--runs N] [--sizes \"10000 100000\"] [--disk DIR] [--tmpfs DIR] [--only disk|tmpfs]" >&2; exit 2 ;;
  esac
done
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=$PWD/target/release/locksmith
fi
for tool in python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install python3 time)" >&2; exit 2; }
done

# A PID that names no process: a child that has exited.
true & dead=$!
wait "$dead"

works=()
trap 'rm -rf "${works[@]}"' EXIT

# The floor: creates COUNT small files in DIR/copies, one syncfs, removes the COUNT locks of
# TREE; prints the elapsed seconds.
floor() { # DIR TREE COUNT
  python3 - "$1" "$2" "$3" <<'EOF'
import ctypes, os, sys, time
libc = ctypes.CDLL("libc.so.6", use_errno=True)
work, tree, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
copies = os.path.join(work, "copies")
os.mkdir(copies)
locks = [os.path.join(tree, "d%04d" % (i // 1000), "job%06d.pid" % i) for i in range(n)]
start = time.monotonic()
for i in range(n):
    fd = os.open(os.path.join(copies, "c%06d" % i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"123456\n")
    os.close(fd)
fd = os.open(copies, os.O_RDONLY)
if libc.syncfs(fd) != 0:
    raise OSError(ctypes.get_errno(), "syncfs")
os.close(fd)
for p in locks:
    os.unlink(p)
print("%.3f" % (time.monotonic() - start))
EOF
}

# Runs locksmith ARGS..., printing the elapsed seconds.
timed() {
  local code=0
  /usr/bin/time -f "%e" -o "$work/t" "$bin" "$@" >"$work/out.json" || code=$?
  tail -1 "$work/t"
  return $code
}

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "binary: $bin"
for place in disk tmpfs; do
  [ -n "$only" ] && [ "$only" != "$place" ] && continue
  base=$disk
  [ "$place" = tmpfs ] && base=$tmpfs
  mkdir -p "$base"
  work=$(mktemp -d "$base/locksmith-reclaim-bench.XXXXXX")
  works+=("$work")
  export XDG_STATE_HOME=$work/state
  echo "$place: $work ($(stat -f -c %T "$work"))"
  for n in $sizes; do
    fl=(); rc=(); all=()
    for r in $(seq "$runs"); do
      rm -rf "$work/tree" "$work/copies" "$work/state"
      python3 benches/make_locks.py "$work/tree" "$n" --pid "$dead" >/dev/null
      f=$(floor "$work" "$work/tree" "$n")
      rm -rf "$work/tree" "$work/copies" "$work/state"
      python3 benches/make_locks.py "$work/tree" "$n" --pid "$dead" >/dev/null
      sync -f "$work"
      s=$(timed --scan --json "$work/tree" || true)
      code=0
      t=$(timed --scan --reclaim --json "$work/tree") || code=$?
      left=$(find "$work/tree" -name '*.pid' | wc -l)
      if [ "$code" != 0 ] || [ "$left" != 0 ]; then
        echo "reclaim of $n locks on $place: exit $code, $left locks left" >&2
        exit 1
      fi
      read -r pf pr pa < <(awk -v n="$n" -v f="$f" -v s="$s" -v t="$t" 'BEGIN {
        printf "%.1f %.1f %.1f\n", f / n * 1e6, (t - s) / n * 1e6, t / n * 1e6 }')
      echo "  $n locks, run $r: floor ${f} s, scan ${s} s, scan + reclaim ${t} s: per lock floor ${pf} µs, reclaim ${pr} µs (scan + reclaim ${pa} µs)"
      fl+=("$pf"); rc+=("$pr"); all+=("$pa")
    done
    mf=$(printf '%s\n' "${fl[@]}" | median)
    mr=$(printf '%s\n' "${rc[@]}" | median)
    ma=$(printf '%s\n' "${all[@]}" | median)
    awk -v p="$place" -v n="$n" -v f="$mf" -v r="$mr" -v a="$ma" -v runs="$runs" 'BEGIN {
      printf "%s, %d locks: median per lock: floor %.1f µs, reclaim %.1f µs (%.2fx the floor), scan + reclaim %.1f µs (%.2fx) (%d runs)\n",
        p, n, f, r, r / f, a, a / f, runs }'
  done
  rm -rf "$work"
done
