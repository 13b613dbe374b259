#!/usr/bin/env bash
# Fails when the plugin would not run on every x86-64 (or, with ALLOT_PORTABLE_ARCH=arm64,
# every arm64) Linux node: it must be a static
# executable (no program interpreter, no NEEDED shared library), carry no GLIBC_ symbol version
# newer than 2.28, and never name the host's libcurl.so (nothing to dlopen from the node).
# Seconds; no cluster. First it checks itself: a dynamic binary of this machine must fail.
#
#   test/portable/portable_check.sh [PLUGIN]     default build/plugin/allot
#
# Prints `ok - NAME` / `not ok - NAME` per check, then `portable: N passed, N failed`.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"   # ok, bad, suite_summary
SUITE_NAME=portable
plugin=${1:-$root/build/plugin/allot}
MAX_GLIBC=2.28
arch=${ALLOT_PORTABLE_ARCH:-amd64}
case "$arch" in
  amd64) machine=X86-64 ;;
  arm64) machine=AArch64 ;;
  *) suite_die "ALLOT_PORTABLE_ARCH=$arch: amd64 or arm64" ;;
esac

# newest_glibc FILE: the highest GLIBC_x.y version any dynamic symbol of FILE needs (empty:
# none).
newest_glibc() {
  objdump -T "$1" 2>/dev/null | grep -oE 'GLIBC_[0-9]+(\.[0-9]+)+' | sed 's/^GLIBC_//' |
    sort -V | tail -n 1
}
# problems FILE: one line per reason FILE is not portable; nothing when it is.
problems() {
  local f=$1 v
  [[ -f "$f" ]] || { echo "$f does not exist"; return; }
  readelf -h "$f" 2>/dev/null | grep -q "Machine:.*$machine\$" || echo "not an $arch ELF file"
  readelf -lW "$f" 2>/dev/null | grep -q 'Requesting program interpreter' &&
    echo "dynamically linked: needs the loader $(readelf -lW "$f" | sed -n 's/.*interpreter: \(.*\)]/\1/p')"
  local needed
  needed=$(readelf -dW "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  [[ -n "$needed" ]] && echo "needs shared libraries: $needed"
  v=$(newest_glibc "$f")
  if [[ -n "$v" && $(printf '%s\n%s\n' "$v" "$MAX_GLIBC" | sort -V | tail -n 1) != "$MAX_GLIBC" ]]; then
    echo "needs GLIBC_$v: $(objdump -T "$f" | grep -oE "[^ ]*GLIBC_$v\)? +[^ ]+$" | awk '{print $NF}' | sort -u | head -n 5 | tr '\n' ' ')"
  fi
  grep -qaF 'libcurl.so' "$f" && echo "names libcurl.so: it would dlopen the node's libcurl"
  return 0
}

for tool in objdump readelf; do
  command -v "$tool" >/dev/null || suite_die "$tool is installed (binutils)"
done

# The check itself: this machine's (dynamic, glibc 2.36) binaries must be refused.
for probe in /bin/true "$root/build/gc-sidecar/allot-gc"; do
  [[ -f "$probe" ]] || continue
  if out=$(problems "$probe") && [[ -n "$out" ]]; then
    ok "a dynamic binary is refused: $probe ($(head -n 1 <<<"$out"))"
  else
    bad "a dynamic binary is refused: $probe passed the check"
  fi
done

out=$(problems "$plugin")
if [[ -z "$out" ]]; then
  newest=$(newest_glibc "$plugin")
  ok "$plugin is static: no loader, no shared library, no GLIBC_ version above $MAX_GLIBC (newest: ${newest:-none}), no libcurl.so ($(stat -c %s "$plugin") bytes)"
else
  bad "$plugin runs on any $arch Linux node"
  # shellcheck disable=SC2001 # a prefix on every line
  sed 's/^/#   /' <<<"$out"
fi

suite_summary
((failed == 0))
