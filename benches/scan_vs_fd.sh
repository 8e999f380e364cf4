#!/usr/bin/env bash
# Scan benchmark: `locksmith --scan --json TREE` (judging every lock it finds) against
# `fdfind -HI -u -g '*.lock' TREE` (names only) and `find TREE` with the lock-name patterns,
# on a generated tree of 500,000 entries holding about 1,000 lock files of every dialect.
# Beside them, the floor of any walk on this machine (`benches/walk_floor.rs`: every directory
# opened, read and closed on as many threads as there are cores, nothing else), which tells
# how low a ratio to fd can go here at all.
#
# Targets: locksmith's median at most 0.4 times fd's (ratio <= 0.40) although it judges every
# lock it finds; peak RSS <= 64 MiB; the evidence snapshot taken once per scan (/proc/locks read
# once).
#
# usage: benches/scan_vs_fd.sh [--runs N] [--entries N] [--locks N]
# env:   LOCKSMITH_BENCH_TREE  where the tree is cached (default /tmp/locksmith-bench-tree)
#
# Needs: python3, hyperfine, fd-find, time (GNU /usr/bin/time); strace is optional.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=15
entries=500000
locks=1000
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --entries) entries=$2; shift 2 ;;
    --locks) locks=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--entries N] [--locks N]" >&2; exit 2 ;;
  esac
done

for tool in python3 hyperfine fdfind /usr/bin/time; do
  if ! command -v "$tool" >/dev/null; then
    echo "missing $tool (apt-get install python3 hyperfine fd-find time)" >&2
    exit 2
  fi
done

tree=${LOCKSMITH_BENCH_TREE:-/tmp/locksmith-bench-tree}
python3 benches/make_tree.py "$tree" --entries "$entries" --locks "$locks"

cargo build --release --quiet
bin=$PWD/target/release/locksmith
floor=$(cargo bench --bench walk_floor --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "walk_floor" and m.get("executable"):
        print(m["executable"])')
out=$PWD/target/bench
mkdir -p "$out"

# The names the dialects claim (find has no single glob for them all).
find_cmd="find $tree ( -name *.lock -o -name *.lck -o -name *.pid -o -name LCK..* \
  -o -name .*.sw? -o -name *.swp -o -name .#* -o -name .~lock.*# -o -name .X*-lock \
  -o -name SingletonLock -o -name lock -o -name .parentlock \
  -o -name .terraform.tfstate.lock.info -o -name .package-cache ) -print"

echo "== what locksmith finds in $tree"
"$bin" --scan --json "$tree" >"$out/scan.json" || true
python3 - "$out/scan.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print(f"entries walked {s['entries']}, locks judged {s['locks']} "
      f"(stale {s['stale']}, live {s['live']}, free {s['free']}, foreign {s['foreign']}, "
      f"unknown {s['unknown']}), errors {s['errors']}, scan {s['elapsed_ms']} ms")
EOF

echo "== wall time, warm cache ($runs runs each)"
# locksmith exits 1 when it finds stale locks: -i keeps hyperfine going.
hyperfine -N -i --warmup 3 --runs "$runs" --export-json "$out/scan_vs_fd.json" \
  -n locksmith "$bin --scan --json $tree" \
  -n fd "fdfind -HI -u -g *.lock $tree" \
  -n find "$find_cmd" \
  -n floor "$floor $tree"

echo "== peak memory"
rss() {
  # locksmith exits 1 when it finds stale locks: not a failure here.
  /usr/bin/time -v "$@" >/dev/null 2>"$out/time.txt" || true
  awk -F': ' '/Maximum resident set size/ {print $2}' "$out/time.txt"
}
rss_locksmith=$(rss "$bin" --scan --json "$tree")
rss_fd=$(rss fdfind -HI -u -g '*.lock' "$tree")
echo "locksmith ${rss_locksmith} KiB, fd ${rss_fd} KiB"

snapshots=
if command -v strace >/dev/null; then
  snapshots=$(strace -f -e trace=openat -o "$out/strace.txt" "$bin" --scan --json "$tree" >/dev/null || true
    grep -c '"/proc/locks"' "$out/strace.txt" || true)
fi

python3 - "$out/scan_vs_fd.json" "$rss_locksmith" "${snapshots:-}" <<'EOF'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
rss = int(sys.argv[2])
med = {k: r["median"] * 1000 for k, r in results.items()}
ok = True
print("== summary (medians)")
for k in ("locksmith", "fd", "find", "floor"):
    print(f"{k:10} {med[k]:8.1f} ms")
for k in ("fd", "find", "floor"):
    ratio = med["locksmith"] / med[k]
    print(f"locksmith / {k}: {ratio:.2f}")
ratio = med["locksmith"] / med["fd"]
floor = med["floor"] / med["fd"]
print(f"floor / fd: {floor:.2f} (the lowest ratio to fd any walk of this tree reaches here)")
print(f"target median ratio to fd <= 0.40: {'met' if ratio <= 0.4 else 'MISSED'} ({ratio:.2f})"
      + ("" if ratio <= 0.4 or floor <= 0.4 else
         f"; below the floor on this machine ({floor:.2f}), out of reach of any walk"))
ok &= ratio <= 0.4
print(f"target peak RSS <= 65536 KiB: {'met' if rss <= 65536 else 'MISSED'} ({rss} KiB)")
ok &= rss <= 65536
if sys.argv[3]:
    n = int(sys.argv[3])
    print(f"/proc/locks read {n} time(s) per scan: {'met' if n == 1 else 'MISSED'}")
    ok &= n == 1
sys.exit(0 if ok else 1)
EOF
