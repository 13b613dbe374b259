#!/usr/bin/env bash
# Every command in the README runs in a test: each line of README.md's ```sh blocks (its
# trailing "# comment" dropped) must appear, as written, on a line that is not a comment in one
# of the scripts a test or CI runs: .ci/run, scripts/test, e2e/cluster, e2e/node/cluster and the
# suites under test/ (*.sh). A README command no script runs fails this check.
#
#   test/docs/readme_commands.sh [ROOT [README]]
#
# Prints `ok - COMMAND (FILE:LINE)` / `not ok - COMMAND` per command, then
# `readme-commands: N passed, N failed`. Suite `lint` (test/meson.build).
set -uo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
readme=${2:-$root/README.md}
cd "$root" || exit 2
[[ -r "$readme" ]] || { echo "readme-commands: cannot read $readme" >&2; exit 2; }

# The scripts that run commands: what .ci/run starts (scripts/test and the suites it runs), and
# the clusters they and the real-node harness bring up; not this check's own directory.
mapfile -t scripts < <(printf '%s\n' .ci/run scripts/test e2e/cluster e2e/node/cluster
                       find test -name '*.sh' -type f -not -path 'test/docs/*' | sort)

# commands FILE: the command lines of FILE's ```sh blocks, trailing comments and blanks dropped.
commands() {
  awk '/^```sh[[:space:]]*$/ { inside = 1; next }
       /^```/ { inside = 0; next }
       inside {
         sub(/[[:space:]]+#.*$/, ""); sub(/^[[:space:]]+/, ""); sub(/[[:space:]]+$/, "")
         if ($0 != "" && $0 !~ /^#/) print
       }' "$1"
}

# runs_in COMMAND: prints FILE:LINE of the first script line (not a comment) that holds COMMAND
# as written, bounded by the line's start or end, a space, a quote or a shell operator; fails
# when none does.
runs_in() {
  local cmd=$1 f n line pre post
  for f in "${scripts[@]}"; do
    [[ -f "$f" ]] || continue
    n=0
    while IFS= read -r line || [[ -n "$line" ]]; do
      n=$((n + 1))
      [[ "$line" =~ ^[[:space:]]*# ]] && continue
      [[ "$line" == *"$cmd"* ]] || continue
      pre=${line%%"$cmd"*}
      post=${line#*"$cmd"}
      [[ -z "$pre" || "${pre: -1}" =~ [[:space:]\(\;\&\|\"\'] ]] || continue
      [[ -z "$post" || "${post:0:1}" =~ [[:space:]\)\;\&\|\"\'] ]] || continue
      echo "$f:$n"
      return 0
    done <"$f"
  done
  return 1
}

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $*"; }
bad() { failed=$((failed + 1)); echo "not ok - $*"; }

# The check must be able to fail: a command no script holds is not found.
if where=$(runs_in "allot-readme-commands-canary --never-run"); then
  bad "the check finds a command no script runs (at $where)"
fi

mapfile -t cmds < <(commands "$readme")
((${#cmds[@]} > 0)) || bad "no command found in the sh blocks of $readme"
for c in "${cmds[@]}"; do
  if where=$(runs_in "$c"); then
    ok "$c ($where)"
  else
    bad "$c: in no test or CI script (${scripts[*]:0:4} or test/**/*.sh); make a test run it as written, or drop it from the README"
  fi
done

echo "readme-commands: $passed passed, $failed failed"
((failed == 0))
