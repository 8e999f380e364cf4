#!/usr/bin/env bash
# Steadiness: runs the integration suite many times, several copies at once, and reports every
# failure and every skip. A test that fails one run in a few (it sees what another test, or
# another copy of the suite, holds) shows up here rather than one CI run in a few.
#
#   tests/steady.sh [--runs N] [--jobs J] [--all] [--storm] [FILTER...]
#
#   --runs N     how many runs (default 10)
#   --jobs J     how many run at once (default 2)
#   --all        the whole suite (about 4 minutes a run alone on 2 cores, 8 to 10 two at once)
#                instead of the default: the modules that judge evidence (dialects, verdicts,
#                scan, containers, reclaim, real programs, ...), 2 to 3 minutes a run
#   --storm      in every run, a thread of the test process keeps forking children that wait
#                before they exec (LOCKSMITH_TEST_FORK_STORM): each holds a copy of every
#                descriptor the process has, as a busy test process does now and then
#   FILTER...    test name filters instead, as `cargo test --test suite -- FILTER...` takes
#
# The test binary is built once. Logs go to target/steady/<time>/ (run-N.log, run-N.skips).
# Exits 1 when any run failed, or left a process running.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=10
jobs=2
storm=
all=
filters=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --storm) storm=1; shift ;;
    --all) all=1; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) filters+=("$1"); shift ;;
  esac
done
if [ -z "$all" ] && [ ${#filters[@]} = 0 ]; then
  filters=(dialects:: dialects_more:: verdicts:: scan:: cli_scan:: containers:: reclaim::
    ofd_holders:: real_programs:: engine_evidence:: hostile_input:: util::quiet::)
fi

bin=$(cargo test --test suite --no-run --message-format=json 2>/dev/null \
  | grep -o '"executable":"[^"]*suite-[^"]*"' | tail -1 | cut -d'"' -f4)
[ -x "$bin" ] || { echo "steady: could not build the test binary" >&2; exit 2; }

out="target/steady/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
echo "steady: $runs runs of ${filters[*]:-the whole suite}, $jobs at a time${storm:+, with a fork storm}; logs in $out"

# The processes still running whose environment names SKIPS (the run's skip log, which every
# process the run started inherits): `PID CWD CMD` each.
left_behind() {
  local want="LOCKSMITH_TEST_SKIP_LOG=$1" p
  for p in /proc/[0-9]*; do
    if { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qxF "$want"; then
      echo "${p#/proc/} $(readlink "$p/cwd" 2>/dev/null) $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)"
    fi
  done
}

run() {
  local i=$1 start=$SECONDS rc=0
  env LOCKSMITH_TEST_SKIP_LOG="$PWD/$out/run-$i.skips" ${storm:+LOCKSMITH_TEST_FORK_STORM=1} \
    nice "$bin" "${filters[@]}" >"$out/run-$i.log" 2>&1 || rc=$?
  echo "$rc" >"$out/run-$i.rc"
  # What the run left running: a test that leaves a process behind (a grandchild its guard
  # did not kill) is named by what that process is and where it runs.
  left_behind "$PWD/$out/run-$i.skips" >"$out/run-$i.left"
  local result
  result=$(grep -a '^test result:' "$out/run-$i.log" | tail -1 || true)
  echo "run $i: exit $rc in $((SECONDS - start)) s: ${result:-no result line}"
}

for ((i = 1; i <= runs; i++)); do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
    wait -n || true
  done
  run "$i" &
done
wait

failed=0
for ((i = 1; i <= runs; i++)); do
  [ "$(cat "$out/run-$i.rc")" = 0 ] || failed=$((failed + 1))
done
echo
echo "steady: $((runs - failed)) of $runs runs passed"
if [ "$failed" -gt 0 ]; then
  echo "failing tests (how many runs each):"
  grep -ah '^test .* FAILED$' "$out"/run-*.log | sed 's/^test \(.*\) \.\.\. FAILED$/\1/' \
    | sort | uniq -c | sort -rn | sed 's/^/  /'
  for ((i = 1; i <= runs; i++)); do
    if [ "$(cat "$out/run-$i.rc")" != 0 ] && ! grep -aq '^test .* FAILED$' "$out/run-$i.log"; then
      echo "  run $i failed with no failing test named: $(tail -3 "$out/run-$i.log" | tr '\n' ' ')"
    fi
  done
fi
left=$(cat "$out"/run-*.left 2>/dev/null | wc -l)
echo "left running after their run: $left process(es)"
for ((i = 1; i <= runs; i++)); do
  [ -s "$out/run-$i.left" ] && sed "s/^/  run $i: /" "$out/run-$i.left"
done
all_skips() { cat "$out"/run-*.skips 2>/dev/null || true; }
echo "skipped: $(all_skips | wc -l) (over all runs)"
all_skips | sort | uniq -c | sort -rn | sed 's/^/  /'
[ "$failed" = 0 ] && [ "$left" = 0 ]
