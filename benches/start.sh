#!/usr/bin/env bash
# What `locksmith start` adds to a service's start: `locksmith start PATHS... -- true` against
# `true` alone, with hyperfine, for a few lock paths of an application in /app:
#   tmp/pids/server.pid   a stale pid file (a PID that names no process), written again before
#                         every run, so that every run judges, copies, journals (fsync) and
#                         removes it;
#   run/app.pid           not there (a clean stop: the usual case);
#   cache/                a directory holding a kernel-lock file nobody locks (free: it stays).
# and the clean case alone (`locksmith start run/app.pid -- true`). Measured inside a Podman
# container (busybox imported from a tarball, the host's /usr and libraries lent read-only,
# hyperfine included), where `locksmith start` runs as an entrypoint does, among the few
# processes of its container; then on this host, among all of its processes (the judges' census
# of processes and open files grows with them). Prints the medians and what `locksmith start`
# adds to `true` in each case.
#
#   benches/start.sh [RUNS]           # default 200 runs each; the container part needs root,
#                                     # podman, runc and busybox (skipped with a message otherwise)
#
# Needs hyperfine and jq (apt-get install hyperfine jq). Builds the release binary first.
set -euo pipefail

runs="${1:-200}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build --release --quiet
bin="$root/target/release/locksmith"
for tool in hyperfine jq; do
    command -v "$tool" >/dev/null || { echo "start.sh: $tool is not installed" >&2; exit 2; }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/locksmith-start-bench.XXXXXX")"
pm() {
    podman --root "$work/root" --runroot "$work/runroot" --tmpdir "$work/tmp" \
        --runtime /usr/sbin/runc --cgroup-manager=cgroupfs --storage-driver overlay \
        --events-backend file "$@"
}
cleanup() {
    if [ -e "$work/storage.conf" ]; then
        pm rm -a -f -t 0 >/dev/null 2>&1 || true
        pm system reset -f >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# The benchmark itself, run in a directory APP with state in STATE; BIN is locksmith, JSON the
# result. The same script runs on the host and in the container.
cat >"$work/measure.sh" <<'EOF'
set -eu
bin=$1 app=$2 state=$3 runs=$4 json=$5
mkdir -p "$app/tmp/pids" "$app/run" "$app/cache" "$state"
: >"$app/cache/.package-cache"
export XDG_STATE_HOME="$state"
cd "$app"
# A PID that names no process: a child that has exited.
true & dead=$!
wait "$dead"
hyperfine --shell=none --warmup 20 --runs "$runs" --export-json "$json" \
    --prepare "sh -c 'echo $dead > tmp/pids/server.pid'" \
    -n 'true' "/bin/true" \
    -n 'start, 3 paths (1 stale)' "$bin start tmp/pids/server.pid run/app.pid cache -- /bin/true" \
    -n 'start, 1 path (none there)' "$bin start run/app.pid -- /bin/true" >&2
removed=$(grep -c '"event":"reclaim"' "$state/locksmith/journal.jsonl" || true)
[ "$removed" -ge "$runs" ] || { echo "only $removed removals journaled" >&2; exit 1; }
EOF

report() { # WHERE JSON
    echo "== $1"
    jq -r '
      (.results[0].median * 1000) as $base
      | .results[]
      | "  \(.command): median \(.median * 1000 * 100 | round / 100) ms, adds \((.median * 1000 - $base) * 100 | round / 100) ms to true"
    ' "$2"
}

container=false
if [ "$(id -u)" = 0 ] && command -v podman >/dev/null && [ -x /usr/sbin/runc ] && command -v busybox >/dev/null; then
    container=true
else
    echo "start.sh: no container part (needs root, podman, runc, busybox)" >&2
fi
if $container; then
    printf '[containers]\ndefault_ulimits = []\n' >"$work/containers.conf"
    printf '[storage]\ndriver = "overlay"\ngraphroot = "%s/root"\nrunroot = "%s/runroot"\n' \
        "$work" "$work" >"$work/storage.conf"
    export CONTAINERS_CONF=$work/containers.conf CONTAINERS_STORAGE_CONF=$work/storage.conf
    rootfs=$work/rootfs
    mkdir -p "$rootfs"/{bin,tmp,run,var/lock,proc,dev,sys,etc,out}
    cp "$(command -v busybox)" "$rootfs/bin/busybox"
    for a in $(busybox --list); do [ "$a" = busybox ] || ln -s busybox "$rootfs/bin/$a"; done
    tar -C "$rootfs" -cf "$work/busybox.tar" .
    pm import -q "$work/busybox.tar" localhost/locksmith-start-bench:1 >/dev/null
    mounts=(-v /usr:/usr:ro -v "$bin:/locksmith:ro" -v "$work/measure.sh:/measure.sh:ro" -v "$work:/out")
    for lib in /lib /lib64; do [ -e "$lib" ] && mounts+=(-v "$lib:$lib:ro"); done
    pm run --rm --network none "${mounts[@]}" localhost/locksmith-start-bench:1 \
        sh /measure.sh /locksmith /app /state "$runs" /out/container.json
fi
sh "$work/measure.sh" "$bin" "$work/app" "$work/state" "$runs" "$work/host.json"
echo
$container && report "in a container (its own PID namespace, few processes)" "$work/container.json"
report "on this host ($(ls -d /proc/[0-9]* | wc -l) processes)" "$work/host.json"
