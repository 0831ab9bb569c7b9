# The trainc image: the compiler and kubectl, for CI jobs and pre-commit's `language: docker` hooks.
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

# kubectl, which `trainc diff --live` asks the cluster with (the generated CI's plan job): the
# release binary of the Kubernetes version trainc's cluster tests run, checked against its
# published SHA-256.
ARG KUBECTL_VERSION=v1.36.3
RUN apt-get update \
 && apt-get install -y --no-install-recommends curl \
 && rm -rf /var/lib/apt/lists/* \
 && arch="$(dpkg --print-architecture)" \
 && curl -fsSLo /tmp/kubectl "https://dl.k8s.io/release/${KUBECTL_VERSION}/bin/linux/${arch}/kubectl" \
 && echo "$(curl -fsSL "https://dl.k8s.io/release/${KUBECTL_VERSION}/bin/linux/${arch}/kubectl.sha256")  /tmp/kubectl" \
    | sha256sum --check \
 && install -m 0755 /tmp/kubectl /usr/local/bin/kubectl \
 && rm /tmp/kubectl

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
COPY --from=build /usr/local/bin/kubectl /usr/local/bin/kubectl
RUN useradd --uid 1000 --create-home trainc
USER trainc
ENTRYPOINT ["trainc"]
