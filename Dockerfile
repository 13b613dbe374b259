# Multi-stage build on Debian bookworm: a build stage with the toolchain, a small runtime stage
# with allot, allot-gc, the install script and the shared libraries they load.
FROM debian:bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      g++ meson ninja-build pkg-config libcurl4-openssl-dev rapidjson-dev libyaml-cpp-dev \
      libnl-3-dev libnl-route-3-dev doctest-dev libcpp-httplib-dev ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN meson setup /build --buildtype=release -Db_ndebug=false \
    && ninja -C /build plugin/allot gc-sidecar/allot-gc \
    && strip /build/plugin/allot /build/gc-sidecar/allot-gc

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libcurl4 libcpp-httplib0.11 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/plugin/allot /build/gc-sidecar/allot-gc /usr/local/bin/
COPY deploy/install-cni.sh /usr/local/bin/install-cni.sh
USER 0
ENTRYPOINT ["/usr/local/bin/allot-gc"]
