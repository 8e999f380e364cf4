#!/usr/bin/env bash
# Container benchmark: the same scan (`locksmith --scan --json` with no PATH: the current
# directory, the configured lock places, and, by default, every running container's) on a
# machine with no container, then with 20 running Podman containers, each bind-mounting a
# directory of the scanned tree (with a Rails pid file naming its PID 1) and keeping pid files
# in its own /run and /tmp. The containers add one inventory of /proc per scan, the
# namespace judging of every PID lock, and the walk of 20 containers' lock places.
#
# Also timed with the 20 containers running: the same scan with `--no-containers` (their
# processes seen as the host's, their lock places not walked), for what the awareness itself
# costs on that machine.
#
# Target: the median with 20 containers within 1.2x of the median with none, the tree the same.
# The machine with none and with the containers are timed in turns (--cycles, 3 by default):
# each timing with the containers is set against the average of the medians with none just
# before and just after it, and the ratio is the median of the cycles' ratios.
#
# usage: benches/containers.sh [--runs N] [--cycles N] [--containers N] [--entries N] [--locks N]
# Needs: root, podman, runc, busybox-static, hyperfine, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=15
cycles=3
count=20
entries=50000
locks=200
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --containers) count=$2; shift 2 ;;
    --cycles) cycles=$2; shift 2 ;;
    --entries) entries=$2; shift 2 ;;
    --locks) locks=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--cycles N] [--containers N] [--entries N] [--locks N]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "run as root (podman)" >&2; exit 2; }
for tool in podman /usr/sbin/runc busybox hyperfine python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done

cargo build --release --quiet
bin=$PWD/target/release/locksmith
out=$PWD/target/bench
mkdir -p "$out"

work=$(mktemp -d /tmp/locksmith-bench-containers.XXXXXX)
tree=$work/tree
python3 benches/make_tree.py "$tree" --entries "$entries" --locks "$locks" >/dev/null

# A private podman store, a busybox image, no network (see tests/suite/util/podman.rs).
printf '[containers]\ndefault_ulimits = []\n' >"$work/containers.conf"
printf '[storage]\ndriver = "overlay"\ngraphroot = "%s/root"\nrunroot = "%s/runroot"\n' \
  "$work" "$work" >"$work/storage.conf"
export CONTAINERS_CONF=$work/containers.conf CONTAINERS_STORAGE_CONF=$work/storage.conf
pm() {
  podman --root "$work/root" --runroot "$work/runroot" --tmpdir "$work/tmp" \
    --runtime /usr/sbin/runc --cgroup-manager=cgroupfs --storage-driver overlay \
    --events-backend file "$@"
}
cleanup() {
  pm rm -a -f -t 0 >/dev/null 2>&1 || true
  # Each container's conmon runs a `podman container cleanup` of this store as it exits, which
  # writes the store again: the store goes once none of them is left.
  for _ in $(seq 100); do pgrep -f -- "$work/root" >/dev/null || break; sleep 0.1; done
  pm system reset -f >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

rootfs=$work/rootfs
mkdir -p "$rootfs"/{bin,tmp,run,var/lock,proc,dev,sys,etc}
cp "$(command -v busybox)" "$rootfs/bin/busybox"
for a in $(busybox --list); do [ "$a" = busybox ] || ln -s busybox "$rootfs/bin/$a"; done
tar -C "$rootfs" -cf "$work/busybox.tar" .
pm import -q "$work/busybox.tar" localhost/locksmith-bench:1 >/dev/null

# The scan: defaults, from the tree (the configuration's "." root), with a config home of
# its own so only the embedded configuration applies.
mkdir -p "$work/config"
scan="env XDG_CONFIG_HOME=$work/config sh -c 'cd $tree && exec $bin --scan --json >/dev/null'"

# The app directories the containers bind-mount, with the pid files their servers left: in the
# tree from the start, so the scan with no container is the same scan of the same tree (the
# machine once its containers have stopped); the containers write them again when they start.
for i in $(seq 1 "$count"); do
  mkdir -p "$tree/srv/app$i/tmp/pids"
  echo 1 >"$tree/srv/app$i/tmp/pids/server.pid"
done

start_containers() {
  for i in $(seq 1 "$count"); do
    mkdir -p "$tree/srv/app$i"
    pm run -d --network none --name "web-$i" -v "$tree/srv/app$i:/app" -w /app \
      localhost/locksmith-bench:1 sh -c \
      'mkdir -p tmp/pids && echo 1 > tmp/pids/server.pid && echo 1 > /run/app.pid && echo 4242 > /tmp/old.pid && exec sleep 100000' \
      >/dev/null
  done
  sleep 1
}
stop_containers() {
  pm rm -a -f -t 0 >/dev/null
  for _ in $(seq 100); do pgrep -f -- "$work/root/overlay-containers" >/dev/null || break; sleep 0.1; done
}
unaware="env XDG_CONFIG_HOME=$work/config sh -c 'cd $tree && exec $bin --scan --json --no-containers >/dev/null'"

# The machine with none and the machine with the containers, in turns: each timing with the
# containers is set against the timings with none just before and just after it, so that a
# drift of a shared machine's speed in between weighs on both sides alike.
for c in $(seq 1 "$cycles"); do
  echo "== cycle $c of $cycles: scan with no container ($runs runs)"
  hyperfine -i --warmup 3 --runs "$runs" --export-json "$out/containers_0_$c.json" -n none "$scan"
  echo "== cycle $c: starting $count containers"
  start_containers
  if [ "$c" = 1 ]; then
    env XDG_CONFIG_HOME="$work/config" sh -c "cd $tree && $bin --scan --json" >"$out/containers_scan.json" || true
    python3 - "$out/containers_scan.json" "$count" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
inside = [l for l in d["locks"] if l["path"].startswith("/proc/")]
named = [l for l in d["locks"] if (l.get("process") or {}).get("container")]
s = d["summary"]
# Expected: each container's /run/app.pid live (its PID 1) and /tmp/old.pid stale, found
# inside it; its bind-mounted server.pid `unknown` (PID 1 there is busybox's sleep, not a Rails
# server, and a name that does not match proves nothing).
print(f"entries walked {s['entries']}, locks {s['locks']}; {len(inside)} found inside containers "
      f"(expected {2 * int(sys.argv[2])}), {len(named)} with an owner named in a container "
      f"(expected {sys.argv[2]})")
EOF
  fi
  echo "== cycle $c: scan with $count containers ($runs runs), and with --no-containers beside it"
  hyperfine -i --warmup 3 --runs "$runs" --export-json "$out/containers_n_$c.json" \
    -n "$count containers" "$scan" -n "$count containers, --no-containers" "$unaware"
  echo "== cycle $c: stopping the containers"
  stop_containers
done
echo "== scan with no container, after the last cycle ($runs runs)"
hyperfine -i --warmup 3 --runs "$runs" --export-json "$out/containers_0_$((cycles + 1)).json" -n none "$scan"

python3 - "$out" "$cycles" "$count" <<'EOF'
import json, statistics, sys
out, cycles, count = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = lambda name: json.load(open(f"{out}/{name}.json"))["results"]
cpu = lambda r: (r["user"] + r["system"]) * 1000
none = [load(f"containers_0_{c}")[0] for c in range(1, cycles + 2)]
ratios, cpu_ratios, aware = [], [], []
print("== summary (wall-time medians; CPU time = user + system, means)")
for c in range(cycles):
    b, u = load(f"containers_n_{c + 1}")[:2]
    before, after = none[c]["median"] * 1000, none[c + 1]["median"] * 1000
    base = (before + after) / 2
    many, unaware = b["median"] * 1000, u["median"] * 1000
    ratios.append(many / base)
    cpu_ratios.append(cpu(b) / ((cpu(none[c]) + cpu(none[c + 1])) / 2))
    aware.append(many / unaware)
    print(f"cycle {c + 1}: no container before / after {before:.1f} / {after:.1f} ms; "
          f"{count} containers {many:.1f} ms (--no-containers {unaware:.1f} ms): "
          f"ratio {ratios[-1]:.2f}, CPU {cpu_ratios[-1]:.2f}, awareness {aware[-1]:.2f}")
ratio = statistics.median(ratios)
print(f"median of the cycles: ratio {ratio:.2f} (CPU {statistics.median(cpu_ratios):.2f}; "
      f"awareness on the same machine {statistics.median(aware):.2f})")
print(f"target median ratio <= 1.20: {'met' if ratio <= 1.2 else 'MISSED'} ({ratio:.2f})")
sys.exit(0 if ratio <= 1.2 else 1)
EOF
