# The trainc image: the compiler alone, for CI jobs and pre-commit's `language: docker` hooks.
#   docker build -t REGISTRY/trainc:0.1.0 .
#   docker run --rm -v "$PWD:/src" -w /src REGISTRY/trainc:0.1.0 diff spec.yaml --against out
# Built on Debian 12 with the same packages tools/install-deps.sh installs; meson configures the
# whole project (XGBoost for trainrt, doctest for the tests), but only trainc is built.

FROM debian:12-slim AS build

ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates g++ meson ninja-build pkg-config python3 \
      doctest-dev libcli11-dev libfmt-dev libjsonnet-dev libssl-dev libxgboost-dev libyaml-cpp-dev libyaml-dev \
      libgraphviz-dev libmimalloc-dev nlohmann-json3-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src/trainc
COPY . .
# valijson's headers come from Debian's package, unpacked without its Depends (as install-deps does).
RUN apt-get update \
 && cd /tmp && apt-get download libvalijson-dev && dpkg -x libvalijson-dev_*.deb /opt/valijson \
 && rm -rf /var/lib/apt/lists/* /tmp/libvalijson-dev_*.deb \
 && cd /src/trainc \
 && meson setup /tmp/build --buildtype=release -Dvalijson_include=/opt/valijson/usr/include \
 && ninja -C /tmp/build compiler/trainc \
 && install -D -m 0755 /tmp/build/compiler/trainc /usr/local/bin/trainc

FROM debian:12-slim

ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends diffutils git libfmt9 libgvc6 libjsonnet0 libmimalloc2.0 libssl3 libyaml-0-2 libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/trainc /usr/local/bin/trainc
RUN useradd --uid 1000 --create-home trainc
USER trainc
ENTRYPOINT ["trainc"]
