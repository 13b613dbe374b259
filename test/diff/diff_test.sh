#!/usr/bin/env bash
# Differential test: allot against the Whereabouts v0.9.4 binary (issue 14).
#
#   test/diff/diff_test.sh                short form (scripts/test runs this): the cases from
#                                         Whereabouts' own tests plus 25 seeded random cases
#   test/diff/diff_test.sh --random 500   long form: the same plus 500 random cases
#   test/diff/diff_test.sh --seed 7 ...   another seed (default 14)
#   test/diff/diff_test.sh --replay JSON  one case, as printed by a failing run
#
# The same IPAM configurations and the same ADD/DEL sequences go to both binaries, each
# against its own fresh pools (its own namespace, emptied before each case) on the real
# kube-apiserver + etcd of e2e/cluster (the running one named by ALLOT_CLUSTER_DIR, else a
# private one torn down at exit). Accept/reject of every call and every returned address must
# agree, except for the deviations README.md lists, which test/diff/diff.py recognises from
# the two answers. Whereabouts is built from its released module by bench/build-whereabouts
# (cached; ~4 min cold). Prints one line per case and ends with "diff: N passed, N failed".
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"
SUITE_NAME='diff'

args=()
random=25
while (( $# )); do
  case $1 in
    --random) random=$2; shift 2 ;;
    --random=*) random=${1#--random=}; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done

wa=$("$root/bench/build-whereabouts") || suite_die "Whereabouts builds (bench/build-whereabouts)"
cluster_start || suite_die "cluster starts"

work=$(mktemp -d "${TMPDIR:-/tmp}/allot-diff.XXXXXX")
on_exit "rm -rf '$work'"
# A snapshot: a rebuild during the run must not pull the binary from under us.
cp "$root/build/plugin/allot" "$work/allot" 2>/dev/null || suite_die "build/plugin/allot exists (scripts/build)"
run=diff$(printf '%04x' $(( (RANDOM ^ $$) & 0xffff )))

python3 "$root/test/diff/diff.py" --whereabouts "$wa" --allot "$work/allot" --work "$work" --run "$run" \
  --random "$random" "${args[@]}"
