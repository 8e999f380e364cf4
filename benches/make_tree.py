#!/usr/bin/env python3
"""Generates the scan benchmark's tree: about ENTRIES directory entries, LOCKS of them lock files
of every dialect, laid out like a home directory full of projects (nested source trees, git
repositories with many objects, a few very wide directories, some deep paths).

The tree is deterministic (fixed seed) and cached: when TREE/.locksmith-bench holds the same
parameters, nothing is done. Nothing is named node_modules, so the default excludes do not
shrink the walk compared with fd and find.

usage: make_tree.py TREE [--entries N] [--locks N]
"""

import argparse
import os
import random
import shutil
import struct
import sys

VERSION = 3


def touch(path, content=b""):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    if content:
        os.write(fd, content)
    os.close(fd)


def vim_swap(pid, host, fname):
    block = bytearray(4096)
    block[0:2] = b"b0"
    block[2:12] = b"VIM 9.0\0\0\0"
    block[24:28] = struct.pack("<I", pid)
    block[28:28 + 4] = b"user"
    block[68:68 + len(host)] = host
    block[108:108 + len(fname)] = fname
    block[1007] = 0x55
    return bytes(block)


def make_locks(rng, dirs, n, host):
    """Yields (path, kind, content) for n locks spread over dirs."""
    kinds = [
        ("pid-lock", 30), ("pidfile", 15), ("git", 10), ("vim", 10), ("emacs", 5),
        ("libreoffice", 5), ("uucp", 5), ("empty-lock", 10), ("mkdir", 5), ("x11", 2),
        ("postgres", 1), ("chromium", 1), ("terraform", 1),
    ]
    names, weights = zip(*kinds)
    for i in range(n):
        kind = rng.choices(names, weights)[0]
        d = rng.choice(dirs)
        # Valid on every host (pid_max is at least 32768): mostly dead, now and then live.
        pid = rng.randint(2, 32767)
        if kind == "pid-lock":
            yield os.path.join(d, f"job{i}.lock"), "file", f"{pid}\n".encode()
        elif kind == "pidfile":
            yield os.path.join(d, f"daemon{i}.pid"), "file", f"{pid}\n".encode()
        elif kind == "git":
            g = os.path.join(d, f"repo{i}", ".git")
            yield g, "dir", None
            yield os.path.join(g, "index.lock"), "file", b"DIRC\0\0\0\2"
        elif kind == "vim":
            yield (os.path.join(d, f".notes{i}.txt.swp"), "file",
                   vim_swap(pid, host, f"notes{i}.txt".encode()))
        elif kind == "emacs":
            yield os.path.join(d, f".#draft{i}.org"), "symlink", f"user@{host.decode()}.{pid}:1700000000"
        elif kind == "libreoffice":
            yield (os.path.join(d, f".~lock.report{i}.odt#"), "file",
                   f"Jo,jo,{host.decode()},01.01.2024 10:00,file:///x;".encode())
        elif kind == "uucp":
            yield os.path.join(d, f"LCK..ttyS{i}"), "file", f"{pid:>10}\n".encode()
        elif kind == "empty-lock":
            yield os.path.join(d, f"filelock{i}.lock"), "file", b""
        elif kind == "mkdir":
            yield os.path.join(d, f"proper{i}.lock"), "dir", None
        elif kind == "x11":
            yield os.path.join(d, f".X{100 + i}-lock"), "file", f"{pid:>10}\n".encode()
        elif kind == "postgres":
            pg = os.path.join(d, f"pgdata{i}")
            yield pg, "dir", None
            yield (os.path.join(pg, "postmaster.pid"), "file",
                   f"{pid}\n{pg}\n1700000000\n5432\n/tmp\n*\n  1 2\nready\n".encode())
        elif kind == "chromium":
            p = os.path.join(d, f"profile{i}")
            yield p, "dir", None
            yield os.path.join(p, "SingletonLock"), "symlink", f"{host.decode()}-{pid}"
        elif kind == "terraform":
            t = os.path.join(d, f"infra{i}")
            yield t, "dir", None
            yield (os.path.join(t, ".terraform.tfstate.lock.info"), "file",
                   b'{"ID":"x","Operation":"OperationTypeApply","Who":"a@b"}')


def build(tree, entries, locks):
    rng = random.Random(20240601)
    host = os.uname().nodename.encode()
    os.makedirs(tree)
    count = 0
    dirs = []
    exts = [".rs", ".py", ".c", ".h", ".txt", ".md", ".json", ".o", ".js", ".toml", ""]

    def mkdir(p):
        nonlocal count
        os.mkdir(p)
        dirs.append(p)
        count += 1

    budget = entries - locks
    project = 0
    while count < budget:
        proj = os.path.join(tree, f"project{project:04d}")
        project += 1
        mkdir(proj)
        # A source tree: nested directories of files, sometimes deep.
        stack = [(proj, 0)]
        while stack and count < budget:
            d, depth = stack.pop()
            for f in range(rng.randint(5, 30)):
                touch(os.path.join(d, f"file{f}{rng.choice(exts)}"))
                count += 1
            if depth < rng.choice([3, 4, 5, 9]):
                for s in range(rng.randint(1, 4)):
                    sub = os.path.join(d, f"dir{s}")
                    mkdir(sub)
                    stack.append((sub, depth + 1))
        # Some projects are git repositories with many loose objects.
        if rng.random() < 0.3 and count < budget:
            objects = os.path.join(proj, ".git", "objects")
            os.makedirs(objects)
            count += 2
            for o in range(rng.randint(10, 40)):
                od = os.path.join(objects, f"{o:02x}")
                mkdir(od)
                for k in range(rng.randint(5, 40)):
                    touch(os.path.join(od, f"{rng.getrandbits(152):038x}"))
                    count += 1
        # And now and then a very wide directory.
        if rng.random() < 0.02 and count < budget:
            wide = os.path.join(proj, "cache")
            mkdir(wide)
            for k in range(min(20_000, budget - count)):
                touch(os.path.join(wide, f"entry{k}"))
                count += 1

    made = 0
    for path, kind, content in make_locks(rng, dirs, locks, host):
        if kind == "dir":
            os.makedirs(path, exist_ok=True)
        elif kind == "symlink":
            os.symlink(content, path)
        else:
            touch(path, content)
        made += 1
        count += 1
    return count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tree")
    ap.add_argument("--entries", type=int, default=500_000)
    ap.add_argument("--locks", type=int, default=1_000)
    a = ap.parse_args()
    stamp = os.path.join(a.tree, ".locksmith-bench")
    want = f"v{VERSION} entries={a.entries} locks={a.locks}\n"
    try:
        with open(stamp) as f:
            if f.read() == want:
                return 0
    except OSError:
        pass
    if os.path.exists(a.tree):
        shutil.rmtree(a.tree)
    print(f"generating {a.tree} ({a.entries} entries, {a.locks} locks)...", file=sys.stderr)
    n = build(a.tree, a.entries, a.locks)
    with open(stamp, "w") as f:
        f.write(want)
    print(f"generated {n} entries", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
