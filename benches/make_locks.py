#!/usr/bin/env python3
"""Makes COUNT lock files under DIR for the memory and reclaim benchmarks: 1,000 per directory
(DIR/d0000/job000000.pid, ...), each a pid file naming PID (a process that has exited, so every
one is stale), or with --empty, empty `*.lock` files (judged `unknown`: a kernel-lock file or a
lock by existence, nobody can tell).

usage: make_locks.py DIR COUNT [--pid PID | --empty] [--per-dir N]
"""

import argparse
import os


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("count", type=int)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--pid", type=int)
    g.add_argument("--empty", action="store_true")
    p.add_argument("--per-dir", type=int, default=1000)
    a = p.parse_args()
    content = b"" if a.empty else f"{a.pid}\n".encode()
    name = "job%06d.lock" if a.empty else "job%06d.pid"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    d = None
    for i in range(a.count):
        if i % a.per_dir == 0:
            d = os.path.join(a.dir, "d%04d" % (i // a.per_dir))
            os.makedirs(d)
        fd = os.open(os.path.join(d, name % i), flags, 0o644)
        if content:
            os.write(fd, content)
        os.close(fd)


if __name__ == "__main__":
    main()
