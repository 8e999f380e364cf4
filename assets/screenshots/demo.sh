#!/bin/sh
# The tree behind the screen captures in this directory, made with real programs:
#   assets/screenshots/demo.sh up      # make /tmp/locksmith-demo (needs vim, git, tmux)
#   tmux new -d -s demo -x 120 -y 40 "XDG_STATE_HOME=/tmp/locksmith-demo-state locksmith /tmp/locksmith-demo"
#   tmux capture-pane -p -t demo > assets/screenshots/table.txt
#   assets/screenshots/demo.sh down    # stop the live owners, remove the tree
# The other captures are of the same UI after keys: Enter (detail-*), d (reclaim-dialog),
# D (reclaim-all-80x24), Space (marks-80x24), x on the hung git's index.lock (stop-dialog),
# d on backup.lock (force-mkdir-clue), ? (help*); after a D, q and the UI started again:
# u (undo-earlier-session-80x24) and U (journal-view); `locksmith restore` in a terminal
# after a --scan --reclaim (restore-prompt).
set -eu
DEMO=/tmp/locksmith-demo
PIDS=/tmp/locksmith-demo.pids
LOCKSMITH=${LOCKSMITH:-locksmith}

dead_pid() {
    sh -c 'echo $$'
}

up() {
    rm -rf "$DEMO" /tmp/locksmith-demo-state
    mkdir -p "$DEMO/app/run" "$DEMO/notes" "$DEMO/repo" "$DEMO/projects/company-website"
    : >"$PIDS"

    # Stale: a pidfile whose process is gone.
    dead_pid >"$DEMO/app/run/worker.pid"
    # Live: a pidfile written after its process started.
    sleep 100000 &
    echo $! >>"$PIDS"
    sleep 1.1
    echo $! >"$DEMO/app/run/web.pid"
    # Live: a lock of locksmith's own engine, held by its command.
    "$LOCKSMITH" lock "$DEMO/app/run/deploy.lock" -- sleep 100000 &
    echo $! >>"$PIDS"
    # Unknown: not a PID. Free: cargo's package-cache lock file, which nobody locks now.
    echo "garbage" >"$DEMO/app/run/broken.pid"
    mkdir -p "$DEMO/home/.cargo"
    : >"$DEMO/home/.cargo/.package-cache"
    # Foreign: an emacs lock of another host.
    ln -s "me@build-7.4242:1700000000" "$DEMO/notes/.#plan.org"
    # Stale: git's index.lock left by a crashed git, in two repositories.
    for repo in "$DEMO/repo" "$DEMO/projects/company-website"; do
        git init -q "$repo"
        : >"$repo/.git/index.lock"
        touch -d '11 minutes ago' "$repo/.git/index.lock"
    done
    # Live: a git that hangs holding its index.lock (its editor never returns): x stops it.
    api="$DEMO/projects/api"
    git init -q "$api"
    echo v1 >"$api/README"
    git -C "$api" add README
    git -C "$api" -c user.name=demo -c user.email=demo@example.com commit -q -m v1
    echo v2 >"$api/README"
    printf '#!/bin/sh\nexec sleep 100000\n' >"$DEMO/home/hung-editor"
    chmod +x "$DEMO/home/hung-editor"
    (cd "$api" && GIT_EDITOR="$DEMO/home/hung-editor" \
        exec git -c user.name=demo -c user.email=demo@example.com commit -q -a) \
        </dev/null >/dev/null 2>&1 &
    echo $! >>"$PIDS"
    # Unknown, with a clue: a backup script that took its mkdir lock and still runs (its
    # command line names the lock directory, as `pgrep -af` would show).
    printf '#!/bin/sh\nmkdir "$1" 2>/dev/null\nsleep 100000\n' >"$DEMO/home/backup.sh"
    chmod +x "$DEMO/home/backup.sh"
    "$DEMO/home/backup.sh" "$DEMO/app/run/backup.lock" </dev/null >/dev/null 2>&1 &
    echo $! >>"$PIDS"
    # Stale, with unsaved changes: vim killed while editing.
    echo "buy milk" >"$DEMO/notes/todo.txt"
    tmux new -d -s locksmith-demo-vim -x 80 -y 24 "exec vim $DEMO/notes/todo.txt"
    sleep 1
    tmux send-keys -t locksmith-demo-vim "ocall the plumber" Escape ":preserve" Enter
    sleep 1
    kill -9 "$(tmux display -p -t locksmith-demo-vim '#{pane_pid}')"
    sleep 0.5
    tmux kill-session -t locksmith-demo-vim 2>/dev/null || true
    # Wait for the locksmith lock to exist.
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        [ -e "$DEMO/app/run/deploy.lock" ] && break
        sleep 0.2
    done
}

down() {
    if [ -f "$PIDS" ]; then
        while read -r pid; do
            pkill -P "$pid" 2>/dev/null || true
            kill "$pid" 2>/dev/null || true
        done <"$PIDS"
        rm -f "$PIDS"
    fi
    rm -rf "$DEMO" /tmp/locksmith-demo-state
}

case "${1:-}" in
up) up ;;
down) down ;;
*)
    echo "usage: $0 up|down" >&2
    exit 2
    ;;
esac
