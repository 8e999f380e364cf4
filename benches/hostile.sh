#!/usr/bin/env bash
# The bounds benchmark: root's `locksmith --scan` beside other users' processes made to be
# costly to read (benches/hostile_users.py, as uid 65534): 50 processes holding ~20,000
# descriptors each on one file with a 4 KB path, 4 processes with command lines of 5.5 MB,
# and a namespace of 30,000 mounts stacked on one directory. Each scan is timed (hyperfine,
# median of --runs) and its peak memory taken (GNU time), quiet and then under that load,
# side by side, for:
#   - a directory holding a stale git index.lock (the descriptors are read for it);
#   - the built-in configuration's roots (`locksmith --scan`, the boot unit's scan).
# Targets: under the load, each scan within 2x of the same scan quiet, and under 64 MiB.
#
# usage: benches/hostile.sh [--bin PATH] [--runs N]
# Needs: root, python3, hyperfine, GNU time, setpriv, unshare (user namespaces for uid 65534).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=""
runs=20
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: $0 [--bin PATH] [--runs N]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "needs root (the load runs as uid 65534)" >&2; exit 2; }
if [ -z "$bin" ]; then
  cargo build --release --quiet
  bin=$PWD/target/release/locksmith
fi

work=$(mktemp -d /tmp/locksmith-hostile.XXXXXX)
chmod 755 "$work"
load=
cleanup() {
  [ -n "$load" ] && kill "$load" 2>/dev/null || true
  pkill -9 -u 65534 -f hostile_users.py 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

repo=$work/repo
mkdir -p "$repo"
git -C "$repo" init -q
touch "$repo/.git/index.lock"
mkdir -m 1777 "$work/load"

measure() {
  local label=$1
  shift
  local json=$work/$label.json
  hyperfine --runs "$runs" --warmup 2 -N -i --export-json "$json" "$bin --scan $*" >/dev/null 2>&1
  local median
  median=$(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['results'][0]['median']*1000, 1))" "$json")
  local rss
  rss=$( (/usr/bin/time -f %M "$bin" --scan "$@" 2>&1 >/dev/null || true) | tail -1)
  echo "$label $median $rss"
}

declare -A quiet
for scan in dir roots; do
  args=$([ $scan = dir ] && echo "$repo" || true)
  read -r _ m r < <(measure "quiet-$scan" $args)
  quiet[$scan]="$m $r"
done

# The load: its standard input stays open (a FIFO held by this script) until the end.
mkfifo "$work/stdin"
sleep infinity > "$work/stdin" &
holder=$!
PATH=/usr/bin:/bin setpriv --reuid=65534 --regid=65534 --clear-groups \
  /usr/bin/python3 benches/hostile_users.py "$work/load" \
  --fds 50,19900 --argv 4,5500000 --mounts 30000 < "$work/stdin" > "$work/load.out" 2>&1 &
load=$!
for _ in $(seq 1 300); do
  grep -q ready "$work/load.out" 2>/dev/null && break
  kill -0 "$load" 2>/dev/null || { cat "$work/load.out" >&2; exit 1; }
  sleep 1
done
grep -q ready "$work/load.out" || { echo "the load did not start" >&2; exit 1; }

printf '%-28s %12s %12s %8s %12s %12s\n' scan "quiet ms" "loaded ms" ratio "quiet KiB" "loaded KiB"
for scan in dir roots; do
  args=$([ $scan = dir ] && echo "$repo" || true)
  read -r _ m r < <(measure "loaded-$scan" $args)
  read -r qm qr <<<"${quiet[$scan]}"
  ratio=$(python3 -c "print(round($m/$qm, 2))")
  what=$([ $scan = dir ] && echo "a stale git index.lock" || echo "the configured roots")
  printf '%-28s %12s %12s %8s %12s %12s\n' "$what" "$qm" "$m" "${ratio}x" "$qr" "$r"
done
echo "the verdict of the index.lock under the load:"
"$bin" --scan --json "$repo" 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
for l in d['locks']:
    print(' ', l['verdict'], '-', l['evidence'][0])
print('  errors reported:', len(d['errors']))"
kill "$holder" 2>/dev/null || true
