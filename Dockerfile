# Multi-stage build on Debian bookworm: a build stage with the toolchain, a small runtime stage
# with allot, allot-gc, the install script and the shared libraries they load.
#
# BASE is the Debian bookworm image of the runtime stage, of the image's architecture. Without a
# registry, pass one made locally (test/image/image_test.sh loads a debootstrap'd bookworm as
# allot-base:bookworm):
#   docker build --build-arg BASE=allot-base:bookworm -t allot:0.1.0 .
#
# An arm64 image is cross-compiled on an x86-64 machine: the build stage runs on BUILD_BASE, of
# the machine's own architecture, and TARGETARCH names the image's (a build argument here;
# BuildKit sets it from --platform). The runtime stage's RUN runs arm64 programs, so the
# machine needs qemu-user-static registered with binfmt_misc (scripts/binfmt-arm64).
# test/image/image_test.sh with ALLOT_IMAGE_ARCH=arm64 does all of it, with the classic builder:
#   docker build --build-arg BASE=allot-base:bookworm-arm64 --build-arg BUILD_BASE=allot-base:bookworm \
#     --build-arg TARGETARCH=arm64 -t allot:0.1.0-arm64 .
ARG BASE=debian:bookworm-slim
ARG BUILD_BASE=${BASE}

FROM ${BUILD_BASE} AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends \
      g++ meson ninja-build pkg-config libcurl4-openssl-dev rapidjson-dev libyaml-cpp-dev \
      libnl-3-dev libnl-route-3-dev libcpp-httplib-dev \
      libssl-dev zlib1g-dev dpkg-dev patch make xz-utils \
    && rm -rf /var/lib/apt/lists/*
# /opt/cross: empty for a native build; "--arm64" for arm64 on x86-64, which adds Debian's cross
# compiler (the arm64 libraries are unpacked apart by scripts/arm64-sysroot, not installed) and
# qemu-user, with which meson runs its sanity test of the cross compiler.
ARG TARGETARCH=
RUN build=$(dpkg --print-architecture) target=${TARGETARCH:-$(dpkg --print-architecture)}; \
    if [ "$target" = "$build" ]; then : >/opt/cross; \
    elif [ "$build/$target" = amd64/arm64 ]; then echo --arm64 >/opt/cross \
      && apt-get update && apt-get install -y --no-install-recommends g++-aarch64-linux-gnu qemu-user \
      && rm -rf /var/lib/apt/lists/*; \
    else echo "allot's image builds for $build natively or arm64 from amd64, not for $target on $build" >&2; exit 1; fi
WORKDIR /src
# The plugin is copied onto the node's own OS by install-cni.sh, so it is one static executable
# (see meson.build): its HTTP(S)-only static libcurl is built from Debian's source package first,
# in a layer of its own that source edits do not invalidate.
COPY scripts/curl-static scripts/apt-mirror scripts/arm64-sysroot scripts/
RUN scripts/curl-static $(cat /opt/cross) /opt/curl-static
# Only what the meson build reads: editing docs, scripts or e2e/ keeps the compile cached.
COPY scripts/layer-root scripts/
COPY meson.build meson_options.txt ./
COPY common common
COPY plugin plugin
COPY gc-sidecar gc-sidecar
COPY cli cli
COPY test test
# The git revision the programs report (allot --version, ...): the build context has no .git,
# so pass it: --build-arg REVISION=$(git describe --always --dirty --exclude '*'). Unset: "unknown".
ARG REVISION=
# -O2, not meson's release -O3: g++ 12 raises false -Wrestrict errors in <string> at -O3
# (as scripts/build).
RUN set --; strip=strip; \
    if [ -s /opt/cross ]; then set -- --cross-file "$(scripts/arm64-sysroot)/meson-cross.ini"; strip=aarch64-linux-gnu-strip; fi; \
    meson setup /build "$@" --buildtype=release -Doptimization=2 -Db_ndebug=false -Dstatic_curl=/opt/curl-static \
      -Drevision="$REVISION" \
    && ninja -C /build plugin/allot gc-sidecar/allot-gc cli/kubectl-allot \
    && $strip /build/plugin/allot /build/gc-sidecar/allot-gc /build/cli/kubectl-allot

FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
# libcurl4 is dlopen'ed by allot-gc (the plugin carries its own); allot-gc links cpp-httplib (and
# through it OpenSSL).
RUN apt-get update && apt-get install -y --no-install-recommends libcurl4 libcpp-httplib0.11 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/plugin/allot /build/gc-sidecar/allot-gc /build/cli/kubectl-allot /usr/local/bin/
COPY deploy/install-cni.sh cli/kubectl_complete-allot /usr/local/bin/
USER 0
ENTRYPOINT ["/usr/local/bin/allot-gc"]
