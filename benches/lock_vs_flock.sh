#!/usr/bin/env bash
# Whole-command comparison: `locksmith lock L -- true` against `flock L true` (util-linux),
# uncontended, with hyperfine. Builds the release binary first.
#
#   benches/lock_vs_flock.sh [RUNS]           # on the local file system ($TMPDIR)
#   benches/lock_vs_flock.sh --sshfs [RUNS]   # on sshfs: sshd on 127.0.0.1 with throw-away keys,
#                                             # a plain `sshfs` mount, both removed afterwards (root)
#
# Prints hyperfine's table, then both medians and their ratio. On sshfs, flock(1) only locks
# against processes of this machine (FUSE keeps flock locks in the local kernel), so it is a
# floor for the cost, not an equivalent: the engine's lock there holds across machines.
set -euo pipefail

sshfs=false
if [ "${1:-}" = "--sshfs" ]; then
    sshfs=true
    shift
fi
runs="${1:-1000}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build --release --quiet
bin="$root/target/release/locksmith"

for tool in hyperfine flock jq; do
    command -v "$tool" >/dev/null || { echo "lock_vs_flock.sh: $tool is not installed" >&2; exit 2; }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/locksmith-bench.XXXXXX")"
sshd_pid=
cleanup() {
    if $sshfs; then
        fusermount3 -u "$work/mnt" 2>/dev/null || fusermount3 -uz "$work/mnt" 2>/dev/null || true
        [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
json="$work/result.json"
dir="$work"

if $sshfs; then
    for tool in /usr/sbin/sshd sshfs ssh-keygen fusermount3; do
        command -v "$tool" >/dev/null || { echo "lock_vs_flock.sh: $tool is not installed" >&2; exit 2; }
    done
    mkdir -p "$work/export" "$work/mnt" /run/sshd
    ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
    ssh-keygen -q -t ed25519 -N '' -f "$work/user_key"
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    cat >"$work/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $work/host_key
AuthorizedKeysFile $work/user_key.pub
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
LogLevel ERROR
Subsystem sftp internal-sftp
EOF
    /usr/sbin/sshd -D -f "$work/sshd_config" -E "$work/sshd.log" &
    sshd_pid=$!
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.05
    done
    sshfs -o "port=$port,IdentityFile=$work/user_key,StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,BatchMode=yes,LogLevel=ERROR" \
        "root@127.0.0.1:$work/export" "$work/mnt"
    dir="$work/mnt"
    echo "on sshfs: $(grep " $dir " /proc/self/mountinfo | sed 's/.* - //')"
fi

hyperfine --shell=none --warmup 20 --runs "$runs" --export-json "$json" \
    --command-name "locksmith lock" "$bin lock $dir/a.lock -- true" \
    --command-name "flock" "flock $dir/b.lock true"

median() { jq -r --arg n "$1" '.results[] | select(.command == $n) | .median' "$json"; }
ours="$(median "locksmith lock")"
theirs="$(median "flock")"
awk -v a="$ours" -v b="$theirs" 'BEGIN {
    printf "median: locksmith lock %.3f ms, flock %.3f ms, ratio %.2fx\n", a * 1000, b * 1000, a / b
}'
