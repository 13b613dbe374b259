# Multi-stage build on Debian bookworm: a build stage with the toolchain, a small runtime stage
# with allot, allot-gc, the install script and the shared libraries they load.
#
# BASE is the Debian bookworm image both stages start from. Without a registry, pass one made
# locally (test/image/image_test.sh imports a debootstrap'd bookworm as allot-base:bookworm):
#   docker build --build-arg BASE=allot-base:bookworm -t allot:0.1.0 .
ARG BASE=debian:bookworm-slim

FROM ${BASE} AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends \
      g++ meson ninja-build pkg-config libcurl4-openssl-dev rapidjson-dev libyaml-cpp-dev \
      libnl-3-dev libnl-route-3-dev libcpp-httplib-dev \
      libssl-dev zlib1g-dev dpkg-dev patch make xz-utils \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The plugin is copied onto the node's own OS by install-cni.sh, so it is one static executable
# (see meson.build): its HTTP(S)-only static libcurl is built from Debian's source package first,
# in a layer of its own that source edits do not invalidate.
COPY scripts/curl-static scripts/apt-mirror scripts/
RUN scripts/curl-static /opt/curl-static
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
RUN meson setup /build --buildtype=release -Doptimization=2 -Db_ndebug=false -Dstatic_curl=/opt/curl-static \
      -Drevision="$REVISION" \
    && ninja -C /build plugin/allot gc-sidecar/allot-gc cli/kubectl-allot \
    && strip /build/plugin/allot /build/gc-sidecar/allot-gc /build/cli/kubectl-allot

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
