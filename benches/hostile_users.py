#!/usr/bin/env python3
"""Another user's processes that make every read of them costly, for the bounds benchmark
(benches/hostile.sh) and its tests: run as an unprivileged user, it starts

  --fds N,M       N processes holding M descriptors each on one file whose path is about 4 KB
                  (the file is made in DIR);
  --argv N,BYTES  N processes whose command lines are BYTES long (many 128 KiB arguments);
  --mounts N      one process in a user and mount namespace of its own with N tmpfs mounts
                  stacked on one directory;

prints "ready" on stdout once all of them run, and keeps them until it is killed or its
standard input closes (then it kills them). Linux only; the user needs the descriptors
(RLIMIT_NOFILE), stack (RLIMIT_STACK, for long command lines) and unprivileged user namespaces
it asks for.
"""

import argparse
import os
import resource
import signal
import subprocess
import sys
import time


def hold_fds(path, count):
    """A child that opens `path` `count` times and sleeps."""
    pid = os.fork()
    if pid:
        return pid
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = min(hard, count + 64)
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        fds = [os.open(path, os.O_RDONLY) for _ in range(min(count, want - 64))]
        os.write(1, b"")
        while True:
            time.sleep(3600)
    finally:
        os._exit(0)


def long_argv(total):
    """A sleeping process whose command line is about `total` bytes: a shell (not exec'ing
    its sleep, so its own command line stays) given many 128 KiB arguments, with the stack
    limit raised as far as the user may (the arguments take at most a quarter of it)."""
    chunk = "x" * (128 * 1024 - 1)

    def raise_stack():
        _, hard = resource.getrlimit(resource.RLIMIT_STACK)
        resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))

    return subprocess.Popen(
        ["/bin/sh", "-c", "while :; do sleep 3600; done", "hostile"]
        + [chunk] * max(1, total // (128 * 1024)),
        stdin=subprocess.DEVNULL,
        preexec_fn=raise_stack,
    )


def stacked_mounts(count):
    """A process in a user and mount namespace of its own, `count` tmpfs mounts on one
    directory."""
    script = (
        "set -e; d=$(mktemp -d); i=0; "
        f"while [ $i -lt {count} ]; do mount -t tmpfs -o size=4k none $d; i=$((i+1)); done; "
        "echo mounted; exec sleep infinity"
    )
    p = subprocess.Popen(
        ["/usr/bin/unshare", "--user", "--map-root-user", "--mount", "/bin/sh", "-c", script],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    line = p.stdout.readline()
    if b"mounted" not in line:
        raise SystemExit(f"the stacked mounts could not be made ({line!r})")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--fds", default="")
    ap.add_argument("--argv", default="")
    ap.add_argument("--mounts", type=int, default=0)
    a = ap.parse_args()
    children = []
    procs = []
    try:
        if a.fds:
            n, m = (int(x) for x in a.fds.split(","))
            # A path of about 4 KB: nested directories of long names.
            d = a.dir
            while len(d) < 3900:
                d = os.path.join(d, "d" * 200)
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, "held")
            open(path, "w").close()
            for _ in range(n):
                children.append(hold_fds(path, m))
        if a.argv:
            n, total = (int(x) for x in a.argv.split(","))
            for _ in range(n):
                procs.append(long_argv(total))
        if a.mounts:
            procs.append(stacked_mounts(a.mounts))
        # Give the descriptor holders time to open theirs.
        if children:
            deadline = time.time() + 120
            for pid in children:
                while time.time() < deadline:
                    try:
                        if len(os.listdir(f"/proc/{pid}/fd")) >= 10:
                            break
                    except OSError:
                        pass
                    time.sleep(0.05)
            time.sleep(1)
        print("ready", flush=True)
        sys.stdin.read()
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for p in procs:
            p.kill()
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass


if __name__ == "__main__":
    main()
