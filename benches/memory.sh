#!/usr/bin/env bash
# Memory benchmark: the peak memory per lock found of `locksmith --scan` with each report
# (the table, --json, --format prometheus) and of `--scan --reclaim` (with the table, which
# keeps a row per lock to sort it, and with --json, which keeps nothing of a lock once it is
# written: what the reclaim pass itself keeps), on trees of 100,000 and 1,000,000 stale pid
# files (a dead PID each, 1,000 per directory), side by side in one run.
#
# The figure is the peak resident set size (GNU time's "Maximum resident set size") divided
# by the number of locks found, as the report's summary counts them; the same commands on an
# empty tree give the fixed part (the binary, the evidence snapshot, the threads).
#
# Target: at most 512 bytes per lock found, for each report and for the reclaim, at every
# size. With --base BIN, the same commands are run with another build too, for comparison.
#
# Then, as root, the systemd units' own bounds at the largest size: the metrics unit's command
# (--format prometheus) and the boot unit's (--reclaim, with the table) each run in a memory
# cgroup (v2 or v1) limited to the unit's MemoryMax= (read from assets/systemd), the state
# directory on the disk as the unit has it (/var/lib), so the page cache the journal and the
# copies dirty is charged to the cgroup as under systemd. Target: nothing killed, every lock
# removed. --no-units skips this.
#
# By default the trees and the state directory are on tmpfs (/dev/shm): the 1,000,000-lock
# reclaim keeps a copy and a journal line of each lock there (about 1.5 GB for the two, plus
# the tree), removed at the end. Use --dir to run elsewhere, --sizes for other sizes.
#
# usage: benches/memory.sh [--bin PATH] [--base PATH] [--sizes "100000 1000000"] [--dir DIR]
#                          [--no-reclaim | --only-reclaim] [--no-units]
# Needs: python3, GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=""
base_bin=""
sizes="100000 1000000"
dir=/dev/shm
reclaim=1
units=1
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --base) base_bin=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --no-reclaim) reclaim=0; shift ;;
    --only-reclaim) reclaim=2; shift ;;
    --no-units) units=0; shift ;;
    *) echo "usage: $0 [--bin PATH] [--base PATH] [--sizes \"100000 1000000\"] [--dir DIR] [--no-reclaim | --only-reclaim] [--no-units]" >&2; exit 2 ;;
  esac
done
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=$PWD/target/release/locksmith
fi
for tool in python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install python3 time)" >&2; exit 2; }
done

work=$(mktemp -d "$dir/locksmith-memory-bench.XXXXXX")
cgroup=
disk_state=
cleanup() {
  rm -rf "$work"
  [ -z "$disk_state" ] || rm -rf "$disk_state"
  [ -z "$cgroup" ] || rmdir "$cgroup" 2>/dev/null || true
}
trap cleanup EXIT
export XDG_STATE_HOME=$work/state XDG_CONFIG_HOME=$work/config
# Room for a copy of every lock (a block each: 4 GB at 1,000,000), beyond the default limit.
mkdir -p "$work/config/locksmith"
echo '{"saved": {"max_total_bytes": 17179869184}}' >"$work/config/locksmith/config.json"

# A PID that names no process: a child that has exited.
true & dead=$!
wait "$dead"

# Runs BIN ARGS... and prints "PEAK_KIB LOCKS ELAPSED_S" (locks from the JSON summary or the
# table's summary line; the metrics count them in locksmith_locks).
measure() {
  local b=$1 mode=$2 tree=$3
  local args=(--scan --color never)
  case "$mode" in
    table) ;;
    json) args+=(--json) ;;
    prometheus) args+=(--format prometheus) ;;
    reclaim) args+=(--reclaim) ;;
    reclaim-json) args+=(--reclaim --json) ;;
  esac
  /usr/bin/time -f "%M %e" -o "$work/time" "$b" "${args[@]}" "$tree" >"$work/out" 2>"$work/err" || true
  local locks
  case "$mode" in
    json|reclaim-json) locks=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["locks"])' "$work/out") ;;
    prometheus) locks=$(awk '/^locksmith_locks\{/ { n += $2 } END { print n + 0 }' "$work/out") ;;
    *) locks=$(tail -1 "$work/out" | sed -n 's/^\([0-9]*\) locks\{0,1\}:.*/\1/p') ;;
  esac
  # GNU time puts "Command exited with non-zero status N" first when it is not 0.
  read -r peak elapsed < <(tail -1 "$work/time")
  echo "$peak ${locks:-0} $elapsed"
}

modes="table json prometheus"
[ "$reclaim" = 1 ] && modes="$modes reclaim reclaim-json"
[ "$reclaim" = 2 ] && modes="reclaim reclaim-json"
binaries=("$bin")
[ -n "$base_bin" ] && binaries+=("$base_bin")

echo "binary: $bin${base_bin:+ (base: $base_bin)}"
echo "file system: $(stat -f -c %T "$work")"
mkdir -p "$work/empty"
for b in "${binaries[@]}"; do
  for mode in table json prometheus; do
    read -r peak _ _ < <(measure "$b" "$mode" "$work/empty")
    echo "empty tree, $mode: peak ${peak} KiB ($b)"
  done
done

fail=0
for n in $sizes; do
  for b in "${binaries[@]}"; do
    for mode in $modes; do
      tree=$work/tree
      if [ "${mode#reclaim}" != "$mode" ] || [ ! -d "$tree" ]; then
        rm -rf "$tree" "$work/state"
        python3 benches/make_locks.py "$tree" "$n" --pid "$dead"
      fi
      read -r peak locks elapsed < <(measure "$b" "$mode" "$tree")
      if [ "$locks" = 0 ]; then
        echo "$n locks, $mode: no lock found ($b): $(head -c 300 "$work/err")" >&2
        fail=1
        continue
      fi
      per=$(awk -v p="$peak" -v n="$locks" 'BEGIN { printf "%.0f", p * 1024 / n }')
      verdict=met
      [ "$per" -le 512 ] || verdict=MISSED
      [ "$b" = "$bin" ] && [ "$verdict" = MISSED ] && fail=1
      echo "$n locks, $mode: peak ${peak} KiB for $locks locks: $per bytes per lock (target 512: $verdict), ${elapsed} s ($b)"
      if [ "${mode#reclaim}" != "$mode" ]; then
        left=$(find "$tree" -name '*.pid' | wc -l)
        if [ "$left" != 0 ]; then
          echo "  $left locks left after the reclaim: $(grep -m 3 -o '^kept .*\|"error": *"[^"]*"' "$work/out" | head -3)" >&2
          fail=1
        fi
        rm -rf "$tree" "$work/state"
      fi
    done
  done
  rm -rf "$work/tree"
done

# The units' bounds, at the largest size.
unit_limit() { sed -n 's/^MemoryMax=//p' "assets/systemd/$1.service"; }
# Makes a memory cgroup limited to $1 bytes; sets $cgroup, $cg_peak and $cg_kills (files).
make_cgroup() {
  local name=locksmith-memory-bench-$$
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    cgroup=/sys/fs/cgroup/$name
    mkdir "$cgroup" && echo "$1" >"$cgroup/memory.max" || return 1
    echo 0 >"$cgroup/memory.swap.max" 2>/dev/null || true
    cg_peak=$cgroup/memory.peak cg_kills=$cgroup/memory.events
  elif [ -d /sys/fs/cgroup/memory ]; then
    cgroup=/sys/fs/cgroup/memory/$name
    mkdir "$cgroup" && echo "$1" >"$cgroup/memory.limit_in_bytes" || return 1
    cg_peak=$cgroup/memory.max_usage_in_bytes cg_kills=$cgroup/memory.oom_control
  else
    return 1
  fi
}
# Runs "$@" in $cgroup; prints "PEAK_KIB CGROUP_PEAK_MIB OOM_KILLS ELAPSED_S".
in_cgroup() {
  /usr/bin/time -f "%M %e" -o "$work/time" \
    sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cgroup" "$@" \
    >"$work/out" 2>"$work/err" || true
  local peak elapsed
  read -r peak elapsed < <(tail -1 "$work/time")
  echo "$peak $(($(cat "$cg_peak") / 1048576)) $(awk '$1 == "oom_kill" { print $2 }' "$cg_kills") $elapsed"
}
n=$(printf '%s\n' $sizes | sort -n | tail -1)
if [ "$units" = 1 ] && [ "$(id -u)" != 0 ]; then
  echo "the units' bounds: not measured (needs root for a memory cgroup)"
elif [ "$units" = 1 ]; then
  # The state directory on the disk, as the boot unit's (/var/lib/locksmith).
  disk_state=$(mktemp -d "$PWD/target/locksmith-memory-bench-state.XXXXXX")
  for unit in locksmith-metrics locksmith-reclaim; do
    limit=$(unit_limit "$unit")
    bytes=$(numfmt --from=iec "$limit")
    rm -rf "$work/tree" "$disk_state/locksmith"
    python3 benches/make_locks.py "$work/tree" "$n" --pid "$dead"
    if ! make_cgroup "$bytes"; then
      echo "the units' bounds: no memory cgroup could be made here: not measured" >&2
      fail=1
      break
    fi
    case "$unit" in
      locksmith-metrics) args=(--scan --format prometheus) ;;
      locksmith-reclaim) args=(--scan --reclaim --color never) ;;
    esac
    sync
    read -r peak cg oom elapsed < <(XDG_STATE_HOME=$disk_state in_cgroup "$bin" "${args[@]}" "$work/tree")
    left=$(find "$work/tree" -name '*.pid' | wc -l)
    verdict=met
    if [ "${oom:-0}" != 0 ]; then verdict="MISSED: killed"; fi
    if [ "$unit" = locksmith-reclaim ] && [ "$left" != 0 ]; then verdict="MISSED: $left locks left"; fi
    [ "$verdict" = met ] || fail=1
    echo "$unit (MemoryMax=$limit), $n locks: peak RSS ${peak} KiB, the cgroup's peak ${cg} MiB with its page cache, ${oom:-0} killed, ${elapsed} s: $verdict"
    rmdir "$cgroup"
    cgroup=
  done
fi
exit "$fail"
