# shellcheck shell=bash
# The one way this project builds programs from a pinned Go module into the cache outside the
# repository (${XDG_CACHE_HOME:-~/.cache}/allot): a directory named after the module's version
# and a hash of the recipe, go.mod and go.sum, filled under a lock and moved into place whole, so
# a warm cache never runs the Go toolchain and an interrupted build leaves nothing half-made.
#
# Sourced by e2e/build-helm, e2e/build-promtool, bench/build-whereabouts and
# test/peer/whereabouts-e2e/build. Each defines go_build_into DIR VERSION, which builds its
# programs into DIR (run in the module directory, with go on PATH, CGO_ENABLED=0, -mod=mod and
# the module's checksum taken from go.sum: the checksum database this machine reaches lacks
# some releases), and ends with
#
#   go_cache NAME MODDIR MODULE RECIPE PRINT "OUTPUT..." "$@"
#
#   NAME     the cache directory's prefix, and the name in messages
#   MODDIR   the directory holding the go.mod and go.sum (only those: nothing is copied)
#   MODULE   the module whose version in go.mod names the cache
#   RECIPE   a number, bumped when the way the programs are built changes
#   PRINT    the output whose path is printed; empty: the directory's
#   OUTPUT   the files the directory holds once built (space-separated)
#   "$@"     the script's arguments: none (build if needed, print the path) or --print (print
#            the path without building; exit 1 when not built)

go_cache() {
  local name=$1 moddir=$2 module=$3 recipe=$4 print=$5 version hash cache_root dir out tmp start f
  local -a outputs
  read -r -a outputs <<<"$6"
  shift 6
  version=$(awk -v m="$module" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$moddir/go.mod")
  [[ -n "$version" ]] || { echo "$name: no $module in $moddir/go.mod" >&2; return 1; }
  hash=$( { echo "recipe=$recipe"; cat "$moddir/go.mod" "$moddir/go.sum"; } | sha256sum | cut -c1-16)
  cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/allot"
  dir="$cache_root/$name-$version-$hash"
  out=$dir${print:+/$print}
  if [[ "${1:-}" == --print ]]; then
    echo "$out"
    go_cache_built "$dir" "${outputs[@]}"
    return
  fi
  go_cache_built "$dir" "${outputs[@]}" && { echo "$out"; return 0; }
  mkdir -p "$cache_root"
  exec 9>"$dir.lock"
  flock 9
  go_cache_built "$dir" "${outputs[@]}" && { echo "$out"; return 0; }
  go_cache_toolchain || { echo "$name: no go toolchain on PATH" >&2; return 1; }
  tmp="$dir.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  # shellcheck disable=SC2064 # the path now
  trap "rm -rf '$tmp'" EXIT
  echo "$name: building ${outputs[*]} of $module $version ($(go version | awk '{print $3}')) into $dir" >&2
  start=$(date +%s)
  (
    cd "$moddir"
    export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}$module"
    export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"
    export CGO_ENABLED=0
    go_build_into "$tmp" "$version"
  ) || return 1
  for f in "${outputs[@]}"; do [[ -x "$tmp/$f" ]] || { echo "$name: the build made no $f" >&2; return 1; }; done
  rm -rf "$dir"
  mv "$tmp" "$dir"
  echo "$name: built in $(( $(date +%s) - start ))s" >&2
  echo "$out"
}

# go_cache_built DIR OUTPUT...: DIR holds every OUTPUT.
go_cache_built() {
  local dir=$1 f
  shift
  for f in "$@"; do [[ -x "$dir/$f" ]] || return 1; done
}

# go_cache_toolchain: go on PATH, from where Go is usually installed when it is not there yet.
go_cache_toolchain() {
  local d
  command -v go >/dev/null 2>&1 && return 0
  for d in /usr/local/go/bin "$HOME/go/bin" "$HOME/sdk/go/bin"; do
    [[ -x "$d/go" ]] && { PATH="$d:$PATH"; return 0; }
  done
  return 1
}
