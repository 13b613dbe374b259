#!/usr/bin/env bash
# Builds the Dockerfile's image without a registry and checks what is in it.
#
# No base image is pulled: a Debian bookworm base is made locally with debootstrap
# (--variant=minbase, from the mirror this machine's apt uses), loaded as
# allot-base:bookworm, and passed to `docker build` as BASE. The base is reused when the
# Docker engine already has it; its root filesystem tarball is cached in
# ${XDG_CACHE_HOME:-~/.cache}/allot/image/, so a new engine only re-loads it. Delete both
# to make a fresh base.
#
# Then: allot answers CNI VERSION in the image, allot-gc --help runs (its shared libraries
# load), libcurl (dlopen'ed by allot-gc) is there, install-cni.sh installs a plugin that runs
# on this machine and is static (test/portable/portable_check.sh), and the image is not bigger
# than ALLOT_IMAGE_MAX_MB.
#
# With ALLOT_IMAGE_ARCH=arm64 it builds the arm64 image on this x86-64 machine: the base is
# debootstrap'd for arm64 (allot-base:bookworm-arm64), the build stage cross-compiles on the
# x86-64 base, and qemu-user-static, registered with binfmt_misc for the run
# (scripts/binfmt-arm64), runs the arm64 programs: the runtime stage's apt-get and every check
# below. The installed plugin must then be a static arm64 executable.
#
# Needs root (debootstrap) and a running Docker engine. Prints `ok - NAME` / `not ok - NAME`
# per check, then `image: N passed, N failed`.
#
# Environment: ALLOT_IMAGE_ARCH (amd64, this machine's, or arm64), ALLOT_IMAGE_TAG (default
# allot:test, or allot:test-arm64), ALLOT_IMAGE_MAX_MB (default 150),
# ALLOT_IMAGE_MIRROR (default: the machine's apt mirror), ALLOT_IMAGE_NETWORK (network of
# the build's RUN steps; default: bridge when it reaches the mirror, else host).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh disable=SC1091
source "$root/test/lib.sh"   # on_exit, ok, bad, suite_die
SUITE_NAME=image

SUITE=bookworm
HOST_ARCH=$(dpkg --print-architecture)
ARCH=${ALLOT_IMAGE_ARCH:-$HOST_ARCH}
# The base of this machine's architecture (the build stage's) and the image's own.
HOST_BASE=allot-base:$SUITE
BASE_IMAGE=$HOST_BASE
TAG=${ALLOT_IMAGE_TAG:-allot:test}
if [[ "$ARCH" != "$HOST_ARCH" ]]; then
  [[ "$HOST_ARCH/$ARCH" == amd64/arm64 ]] ||
    { echo "ALLOT_IMAGE_ARCH=$ARCH: this $HOST_ARCH machine builds $HOST_ARCH or arm64 images" >&2; exit 1; }
  BASE_IMAGE=allot-base:$SUITE-$ARCH
  TAG=${ALLOT_IMAGE_TAG:-allot:test-$ARCH}
fi
MAX_MB=${ALLOT_IMAGE_MAX_MB:-150}
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/allot/image"

die() { suite_die "$@"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

t_start=$(now)
[[ $(id -u) -eq 0 ]] || die "runs as root (debootstrap makes device nodes and chroots)"
work=$(mktemp -d "${TMPDIR:-/tmp}/allot-image.XXXXXX")
# A debootstrap that failed half way may leave /proc or /sys mounted in its target.
unmount_under() {
  local m
  for m in $(findmnt -rn -o TARGET | grep "^$1/" | sort -r); do umount -l "$m" 2>/dev/null; done
  return 0
}
on_exit "unmount_under '$work'; rm -rf --one-file-system '$work'"

# ---------------------------------------------------------------------------- tools --

need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v docker >/dev/null || need+=(docker.io)
command -v jq >/dev/null || need+=(jq)
if ((${#need[@]})); then
  echo "# installing ${need[*]}"
  if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" ||
         { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; }; } \
       >"$work/apt.log" 2>&1; then
    die "apt-get install ${need[*]}" "$work/apt.log"
  fi
fi
# Without the buildx plugin, docker's CLI falls back to the classic builder (with a
# deprecation notice); say so up front instead of letting DOCKER_BUILDKIT=1 fail.
if ! docker buildx version >/dev/null 2>&1; then
  export DOCKER_BUILDKIT=0
fi
if docker version --format '{{.Server.Version}}' >"$work/docker.log" 2>&1; then
  ok "the Docker engine answers (server $(cat "$work/docker.log"), $([[ ${DOCKER_BUILDKIT:-} == 0 ]] && echo classic builder || echo BuildKit))"
else
  die "the Docker engine answers" "$work/docker.log"
fi

# ------------------------------------------------------------------------ the mirror --

# This machine's Debian mirror and security archive (scripts/apt-mirror).
{ read -r MIRROR; read -r SECURITY; } < <("$root/scripts/apt-mirror")
MIRROR=${ALLOT_IMAGE_MIRROR:-$MIRROR}
MIRROR=${MIRROR%/}
echo "# mirror $MIRROR${SECURITY:+, security $SECURITY}"

# --------------------------------------------------------------------------- the base --

# make_rootfs DIR ARCH: a minimal bookworm for ARCH in DIR, trimmed like Docker's
# debian:*-slim images.
make_rootfs() {
  local dir=$1
  debootstrap --arch="$2" --variant=minbase "$SUITE" "$dir" "$MIRROR" || return 1
  # debootstrap has finished with its mounts, but be sure before anything is deleted.
  if findmnt -rn -o TARGET | grep -q "^$dir/"; then
    echo "mounts left under $dir:"; findmnt -rn -o TARGET | grep "^$dir/"; return 1
  fi
  rm -f "$dir/etc/apt/sources.list"
  {
    printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$MIRROR" "$SUITE" "$SUITE"
    [[ -n "$SECURITY" ]] &&
      printf '\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$SECURITY" "$SUITE"
  } >"$dir/etc/apt/sources.list.d/debian.sources"
  # No package caches, indexes or translations kept in layers; no docs, man pages or locales.
  cat >"$dir/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  echo 'Acquire::Languages "none";' >"$dir/etc/apt/apt.conf.d/docker-no-languages"
  cat >"$dir/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
EOF
  find "$dir/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$dir/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$dir"/usr/share/man/* "$dir"/usr/share/info/* "$dir"/usr/share/locale/* \
         "$dir"/usr/share/lintian/* "$dir"/var/cache/apt/archives/*.deb "$dir"/var/cache/apt/*.bin \
         "$dir"/var/lib/apt/lists/* "$dir"/var/log/*.log "$dir"/var/log/apt/*
  # The engine mounts its own resolv.conf, hosts and hostname: keep this machine's out.
  : >"$dir/etc/resolv.conf"; : >"$dir/etc/hostname"
}

# load_rootfs TARBALL IMAGE ARCH: the root filesystem TARBALL (gzip) as the one-layer image
# IMAGE for linux/ARCH. Written in `docker save`'s format and loaded, not `docker import`ed:
# Debian 12's engine labels an imported image with its own architecture whatever --platform
# says, and the image built on it inherits the label.
load_rootfs() {
  local dir=$work/load-$3 diff
  mkdir -p "$dir"
  gzip -dc "$1" >"$dir/layer.tar" || return 1
  diff=sha256:$(sha256sum "$dir/layer.tar" | cut -d' ' -f1)
  jq -n --arg arch "$3" --arg diff "$diff" --arg created "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    --arg comment "debootstrap --arch=$3 --variant=minbase $SUITE $MIRROR" \
    '{architecture: $arch, os: "linux", created: $created,
      config: {Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], Cmd: ["bash"]},
      rootfs: {type: "layers", diff_ids: [$diff]},
      history: [{created: $created, comment: $comment}]}' >"$dir/config.json" || return 1
  jq -n --arg tag "$2" '[{Config: "config.json", RepoTags: [$tag], Layers: ["layer.tar"]}]' \
    >"$dir/manifest.json" || return 1
  tar -C "$dir" -c config.json manifest.json layer.tar | docker load
  local rc=$?
  rm -rf "$dir"
  return $rc
}

# base_image IMAGE ARCH: IMAGE (allot-base:bookworm, or -arm64) in the engine, from the cached
# tarball or a fresh debootstrap.
base_image() {
  local image=$1 arch=$2 tarball=$CACHE/debootstrap-$SUITE-minbase.tar.gz
  [[ "$arch" == "$HOST_ARCH" ]] || tarball=$CACHE/debootstrap-$SUITE-minbase-$arch.tar.gz
  docker image inspect "$image" >/dev/null 2>&1 && { echo "reused"; return 0; }
  mkdir -p "$CACHE"
  # One maker at a time; a second run waits and reuses its result.
  exec 9>"$CACHE/$SUITE.lock"
  flock 9
  docker image inspect "$image" >/dev/null 2>&1 && { echo "reused"; return 0; }
  local how="loaded from $tarball"
  if [[ ! -s "$tarball" ]]; then
    local rootfs=$work/rootfs-$arch
    make_rootfs "$rootfs" "$arch" >>"$work/base.log" 2>&1 || return 1
    if ! tar --numeric-owner --xattrs -C "$rootfs" -c . | gzip -1 >"$tarball.tmp.$$"; then
      rm -f "$tarball.tmp.$$"; return 1
    fi
    mv -f "$tarball.tmp.$$" "$tarball" || return 1
    rm -rf --one-file-system "$rootfs"
    how="debootstrap'd from $MIRROR, cached in $tarball"
  fi
  load_rootfs "$tarball" "$image" "$arch" >>"$work/base.log" 2>&1 || return 1
  exec 9>&-
  echo "$how"
}

# Another architecture's programs, in its debootstrap and its containers, run under qemu.
if [[ "$ARCH" != "$HOST_ARCH" ]]; then
  if binfmt=$("$root/scripts/binfmt-arm64" 2>&1); then
    [[ "$binfmt" == registered ]] && on_exit "'$root/scripts/binfmt-arm64' --remove"
    ok "qemu-user-static runs arm64 programs (binfmt_misc entry $binfmt)"
  else
    die "scripts/binfmt-arm64: $binfmt"
  fi
fi

# The build stage's base (this machine's architecture), and the image's when it is another.
bases=("$HOST_BASE $HOST_ARCH")
[[ "$ARCH" != "$HOST_ARCH" ]] && bases+=("$BASE_IMAGE $ARCH")
for base in "${bases[@]}"; do
  read -r image arch <<<"$base"
  t0=$(now)
  if how=$(base_image "$image" "$arch"); then
    ok "base image $image: $how ($(since "$t0")s)"
  else
    die "base image $image (debootstrap --arch=$arch --variant=minbase $SUITE $MIRROR, docker load)" "$work/base.log"
  fi
done

# ---------------------------------------------------------------------------- the build --

# The build's RUN steps need the mirror: the default bridge when it gets there, else the
# host's network.
mirror_host=${MIRROR#*://}; mirror_host=${mirror_host%%/*}
mirror_port=80; [[ $MIRROR == https://* ]] && mirror_port=443
[[ $mirror_host == *:* ]] && { mirror_port=${mirror_host##*:}; mirror_host=${mirror_host%:*}; }
reaches() {  # reaches NETWORK: a container on NETWORK opens a TCP connection to the mirror
  timeout 30 docker run --rm --network "$1" "$HOST_BASE" \
    timeout 10 bash -c "exec 3<>/dev/tcp/$mirror_host/$mirror_port" >/dev/null 2>&1
}
NET=${ALLOT_IMAGE_NETWORK:-}
if [[ -z "$NET" ]]; then
  if reaches bridge; then NET=bridge
  elif reaches host; then NET=host
  else die "a container reaches the mirror $mirror_host:$mirror_port (bridge or host network)"
  fi
fi

old_id=$(docker image inspect -f '{{.Id}}' "$TAG" 2>/dev/null)
t0=$(now)
build_args=(--build-arg "BASE=$BASE_IMAGE")
[[ "$ARCH" != "$HOST_ARCH" ]] &&
  build_args+=(--build-arg "BUILD_BASE=$HOST_BASE" --build-arg "TARGETARCH=$ARCH")
if docker build --network "$NET" "${build_args[@]}" -t "$TAG" "$root" >"$work/build.log" 2>&1; then
  t_build=$(since "$t0")
  cached=$(grep -cE 'Using cache|CACHED' "$work/build.log")
  ok "docker build --network $NET ${build_args[*]} -t $TAG ($t_build s, $cached steps from cache)"
else
  die "docker build --network $NET ${build_args[*]} -t $TAG" "$work/build.log"
fi
# What the previous run left is garbage now (when nothing else uses it): the image this tag
# named, and the classic builder's untagged image of the build stage (the compile cache of
# sources that have changed since). Each is about 10 MB of its own per source change.
new_id=$(docker image inspect -f '{{.Id}}' "$TAG")
if [[ -n "$old_id" && "$old_id" != "$new_id" ]] &&
   [[ $(docker image inspect -f '{{len .RepoTags}}' "$old_id" 2>/dev/null) == 0 ]]; then
  docker image rm "$old_id" >/dev/null 2>&1 || true
fi
stage_file=$CACHE/build-stage-${TAG//[^A-Za-z0-9._-]/_}
stage_id=$(awk '/^Step [0-9]+\/[0-9]+ : FROM / && ++from == 2 { print id; exit }
                /^ ---> [0-9a-f]+$/ { id = $2 }' "$work/build.log")
if [[ -n "$stage_id" ]]; then
  old_stage=$(cat "$stage_file" 2>/dev/null)
  if [[ -n "$old_stage" && "$old_stage" != "$stage_id" ]] &&
     [[ $(docker image inspect -f '{{len .RepoTags}}' "$old_stage" 2>/dev/null) == 0 ]]; then
    docker image rm "$old_stage" >/dev/null 2>&1 || true
  fi
  mkdir -p "$CACHE" && echo "$stage_id" >"$stage_file"
fi

# ---------------------------------------------------------------------------- the image --

# run ARGS...: a container of the image, removed afterwards (its platform named: the engine
# warns on stderr about one not its own).
run() { docker run --rm -i --platform "linux/$ARCH" "$@"; }

# The image says it is for ARCH, and its programs are ARCH executables.
platform=$(docker image inspect -f '{{.Os}}/{{.Architecture}}' "$TAG")
machine=X86-64; [[ "$ARCH" == arm64 ]] && machine=AArch64
mkdir -p "$work/bin"
cid=$(docker create --platform "linux/$ARCH" "$TAG" 2>"$work/create.log") || tail_of "$work/create.log"
wrong=()
for prog in allot allot-gc kubectl-allot; do
  docker cp "${cid:-none}:/usr/local/bin/$prog" "$work/bin/$prog" >/dev/null 2>&1 &&
    readelf -h "$work/bin/$prog" 2>/dev/null | grep -q "Machine:.*$machine\$" || wrong+=("$prog")
done
[[ -n "${cid:-}" ]] && docker rm "$cid" >/dev/null 2>&1
if [[ "$platform" == "linux/$ARCH" && ${#wrong[@]} -eq 0 ]]; then
  ok "the image is $platform; allot, allot-gc and kubectl-allot are $machine executables"
else
  bad "the image is linux/$ARCH with $machine programs: it says $platform; not $machine: ${wrong[*]:-none}"
fi

if out=$(echo '{"cniVersion":"1.1.0"}' |
           run -e CNI_COMMAND=VERSION --entrypoint /usr/local/bin/allot "$TAG" 2>&1) &&
   jq -e '.cniVersion == "1.1.0" and (.supportedVersions | index("0.3.1") and index("1.1.0"))' \
     <<<"$out" >/dev/null 2>&1; then
  ok "allot VERSION in the image: $out"
else
  bad "allot VERSION in the image"; echo "#   $out"
fi

if run "$TAG" --help >"$work/help.log" 2>&1 && grep -q -- '--node-name' "$work/help.log"; then
  ok "allot-gc --help in the image (the entrypoint; its shared libraries load)"
else
  bad "allot-gc --help in the image"; tail_of "$work/help.log"
fi

if out=$(run --entrypoint /bin/sh "$TAG" -c 'ldconfig -p | grep -F "libcurl.so.4 "' 2>&1); then
  ok "libcurl.so.4, which allot-gc dlopens, is in the image"
else
  bad "libcurl.so.4, which allot-gc dlopens, is in the image"; echo "#   $out"
fi

# The DaemonSet's init container, with this machine as the node (an arm64 plugin runs here under
# qemu).
mkdir -p "$work/node/bin" "$work/node/conf"
if run -e NODE_NAME=image-test -e POOL_NAMESPACE=allot-pools -e POD_UID=0b9a5c6e-image-test \
     -v "$work/node/bin:/host/opt/cni/bin" -v "$work/node/conf:/host/etc/cni/net.d/allot.d" \
     --entrypoint /usr/local/bin/install-cni.sh "$TAG" >"$work/install.log" 2>&1 &&
   out=$(echo '{"cniVersion":"1.0.0"}' | CNI_COMMAND=VERSION "$work/node/bin/allot" 2>&1) &&
   jq -e '.cniVersion == "1.0.0"' <<<"$out" >/dev/null 2>&1 &&
   jq -e '.namespace == "allot-pools"' "$work/node/conf/allot.conf" >/dev/null 2>&1 &&
   [[ $(cat "$work/node/conf/nodename") == image-test ]]; then
  ok "install-cni.sh installs a plugin that runs on this machine, allot.conf and nodename"
else
  bad "install-cni.sh installs a plugin that runs on this machine, allot.conf and nodename"
  tail_of "$work/install.log"; echo "#   ${out:-}"; find "$work/node" 2>&1 | sed 's/^/#   /'
fi

# What install-cni.sh put on the node runs on any node OS of its architecture: static, no host
# libcurl.
if [[ -f "$work/node/bin/allot" ]] &&
   out=$(ALLOT_PORTABLE_ARCH=$ARCH "$root/test/portable/portable_check.sh" "$work/node/bin/allot" 2>&1); then
  ok "the installed plugin is static $(grep -o '([0-9]* bytes)' <<<"$out" | tail -n 1)"
else
  bad "the installed plugin is static"; grep -v '^ok' <<<"${out:-no plugin installed}" | sed 's/^/#   /'
fi

size=$(docker image inspect -f '{{.Size}}' "$TAG")
base_size=$(docker image inspect -f '{{.Size}}' "$BASE_IMAGE")
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1000000 }'; }
if ((size <= MAX_MB * 1000000)); then
  ok "image size $(mb "$size") MB (base $(mb "$base_size") MB; limit $MAX_MB MB)"
else
  bad "image size $(mb "$size") MB (base $(mb "$base_size") MB) is over $MAX_MB MB"
fi
docker history --no-trunc --format '{{.Size}}\t{{.CreatedBy}}' "$TAG" 2>/dev/null |
  sed -E 's@/bin/sh -c (#\(nop\) *)?@@' | cut -c1-100 | sed 's/^/#   layer /'

echo "# total $(since "$t_start")s"
suite_summary
((failed == 0))
