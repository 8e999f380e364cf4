#!/bin/sh
# The pictures of the UI in the README and the book (docs/src/images/*.svg), made from the
# real binary under tmux, on the tree demo.sh makes with real programs (needs vim, git, tmux,
# python3):
#   cargo build && LOCKSMITH=$PWD/target/debug/locksmith assets/screenshots/pictures.sh
# Each picture is the screen as tmux has it (colours included), drawn cell by cell by
# ansi2svg.py:
#   table.svg           the table at 120x40, stale locks first
#   detail.svg          Enter on the vim swap file with unsaved changes
#   reclaim-dialog.svg  d on the stale worker.pid
#   table-80x24.svg     the table at 80x24
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$(cd "$here/../../docs/src/images" 2>/dev/null && pwd || {
    mkdir -p "$here/../../docs/src/images" && cd "$here/../../docs/src/images" && pwd
})
LOCKSMITH=${LOCKSMITH:-locksmith}
export LOCKSMITH
session=locksmith-pictures

screen() {
    tmux capture-pane -p -t "$session"
}

# Waits (at most 30 s) until the screen shows the text $1.
wait_for() {
    i=0
    until screen | grep -qF -- "$1"; do
        i=$((i + 1))
        [ "$i" -le 150 ] || { echo "pictures: the screen never showed '$1':" >&2; screen >&2; exit 1; }
        sleep 0.2
    done
}

# Writes the screen to docs/src/images/$1.svg.
shoot() {
    size=$(tmux display -p -t "$session" '#{window_width} #{window_height}')
    tmux capture-pane -e -p -t "$session" |
        python3 "$here/ansi2svg.py" --cols "${size% *}" --rows "${size#* }" >"$out/$1.svg"
    echo "pictures: $out/$1.svg"
}

# Finds the row whose path holds $1 (f, the text, Enter).
select_row() {
    tmux send-keys -t "$session" f
    tmux send-keys -t "$session" -l "$1"
    tmux send-keys -t "$session" Enter
    sleep 0.3
}

cleanup() {
    tmux kill-session -t "$session" 2>/dev/null || true
    "$here/demo.sh" down
}
trap cleanup EXIT

"$here/demo.sh" up
tmux new -d -s "$session" -x 120 -y 40 \
    "XDG_STATE_HOME=/tmp/locksmith-demo-state TERM=xterm-256color $LOCKSMITH /tmp/locksmith-demo"
wait_for "free"
wait_for "vim-swap"
# Two rounds of re-judging, so that every verdict has settled.
sleep 5
tmux send-keys -t "$session" g
sleep 0.3
shoot table

select_row todo.txt
tmux send-keys -t "$session" Enter
wait_for "Details"
shoot detail
tmux send-keys -t "$session" Escape
sleep 0.3

select_row worker.pid
tmux send-keys -t "$session" d
wait_for "Reclaim this"
shoot reclaim-dialog
tmux send-keys -t "$session" n
sleep 0.3

tmux resize-window -t "$session" -x 80 -y 24
tmux send-keys -t "$session" g
sleep 1
shoot table-80x24
tmux send-keys -t "$session" q
