#include <doctest/doctest.h>

#include <string>

#include "emit/emitter.h"

namespace trainc {
namespace {

constexpr const char* kPath = "docker/trainrt.Dockerfile";

std::string emit_docker(const System& sys) {
  OutputSink out;
  for (const auto& e : emitters())
    if (e->name() == "docker") e->emit(sys, k8s::plan(sys), out);
  auto it = out.files().find(kPath);
  return it == out.files().end() ? "" : it->second;
}

System on_gcp() {
  System sys;
  sys.name = "xgb";
  sys.ns = "xgb";
  sys.gcp = Gcp{"proj", "us-central1", "us-central1-b", ""};
  Step train;
  train.name = "train";
  train.run = XGBoost{};
  sys.steps.push_back(train);
  return sys;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_CASE("docker: the trainrt Dockerfile starts with the generated notice and is the same every time") {
  const std::string a = emit_docker(on_gcp());
  REQUIRE(!a.empty());
  CHECK(a.rfind(std::string("# ") + std::string(kGeneratedNotice) + "\n", 0) == 0);
  CHECK(a == emit_docker(on_gcp()));
  CHECK(!contains(a, "@TRAINRT_VERSION@"));
  CHECK(!contains(a, "@"));  // every template mark filled in
}

TEST_CASE("docker: pinned bases, XGBoost built with CUDA and NCCL, a non-root runtime stage") {
  const std::string d = emit_docker(on_gcp());
  CHECK(contains(d, "FROM nvidia/cuda:13.0.1-devel-ubuntu24.04 AS builder\n"));
  CHECK(contains(d, "FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04\n"));
  CHECK(contains(d, "ARG XGBOOST_VERSION=3.1.3\n"));
  CHECK(contains(d, "--branch \"v${XGBOOST_VERSION}\" --depth 1 --recursive"));
  CHECK(contains(d, "-DUSE_CUDA=ON"));
  CHECK(contains(d, "-DUSE_NCCL=ON"));
  CHECK(contains(d, "-DCMAKE_CUDA_ARCHITECTURES=\"80-real;90-real;100\""));
  CHECK(contains(d, "\nUSER 10001:10001\n"));
  CHECK(contains(d, "\nENTRYPOINT [\"trainrt\"]\n"));
  CHECK(contains(d, "\nHEALTHCHECK NONE\n"));
  CHECK(contains(d, "org.opencontainers.image.version=\""));
  CHECK(!contains(d, ":latest"));
  CHECK(!contains(d, "org.opencontainers.image.created"));  // no timestamps: the same spec, the same bytes
  // Every apt-get install cleans its lists in the same layer.
  std::size_t installs = 0, cleans = 0;
  for (std::size_t i = d.find("apt-get install"); i != std::string::npos; i = d.find("apt-get install", i + 1)) ++installs;
  for (std::size_t i = d.find("rm -rf /var/lib/apt/lists/*"); i != std::string::npos; i = d.find("rm -rf /var/lib/apt/lists/*", i + 1)) ++cleans;
  CHECK(installs == 2);
  CHECK(cleans == installs);
}

TEST_CASE("docker: emitted for systems that run trainrt, not for others") {
  System plain;
  plain.name = "mnist";
  Step torch;
  torch.name = "train";
  torch.image = "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime";
  plain.steps.push_back(torch);
  CHECK(!uses_trainrt(plain));
  CHECK(emit_docker(plain).empty());

  CHECK(uses_trainrt(on_gcp()));
  System gcp_only = on_gcp();
  gcp_only.steps.clear();
  CHECK(!uses_trainrt(gcp_only));
}

TEST_CASE("docker: a build with a base gets docker/<name>.Dockerfile; a user's Dockerfile gets none") {
  System sys = on_gcp();
  sys.origin = {"examples/xgb/spec.yaml", "golden"};
  Build gen;
  gen.name = "prep";
  gen.of = "step";
  gen.context = "image";
  gen.base = "python:3.12-slim";
  gen.requirements = "requirements.txt";
  gen.copy = {"prep.py", "conf/"};
  gen.workdir = "/work dir";
  gen.writable = {"/data/in"};
  gen.image = "us-central1-docker.pkg.dev/proj/xgb/prep:c-0123456789abcdef";
  Build own = gen;
  own.name = "serve";
  own.base.clear();
  own.dockerfile = "Dockerfile";
  sys.builds = {{gen.name, gen}, {own.name, own}};
  OutputSink out;
  for (const auto& e : emitters())
    if (e->name() == "docker") e->emit(sys, k8s::plan(sys), out);
  REQUIRE(out.files().count("docker/prep.Dockerfile") == 1);
  CHECK(out.files().count("docker/serve.Dockerfile") == 0);
  const std::string& d = out.files().at("docker/prep.Dockerfile");
  CHECK(contains(d, "\nFROM python:3.12-slim\n"));
  CHECK(contains(d, "COPY [\"requirements.txt\", \"/tmp/requirements.txt\"]\nRUN python3 -m pip install"));
  CHECK(contains(d, "COPY --chown=1000:1000 [\"prep.py\", \"/work dir/prep.py\"]"));
  CHECK(contains(d, "COPY --chown=1000:1000 [\"conf/\", \"/work dir/conf/\"]"));
  CHECK(contains(d, " && mkdir -p /home/trainc '/work dir' /data/in && chown 1000:1000 /home/trainc '/work dir' /data/in\n"));
  // uid 1000 gets a passwd entry unless the base has one, and a home of its own.
  CHECK(contains(d, "echo 'trainc:x:1000:1000:trainc:/home/trainc:/bin/sh' >> /etc/passwd"));
  CHECK(contains(d, "\nENV HOME=/home/trainc\n"));
  CHECK(contains(d, "docker build -f golden/xgb/docker/prep.Dockerfile"));
  CHECK(contains(d, " examples/xgb/image\n"));
  CHECK(d.substr(d.size() - 15) == "USER 1000:1000\n");
  CHECK(!contains(d, "@"));
}

}  // namespace
}  // namespace trainc
