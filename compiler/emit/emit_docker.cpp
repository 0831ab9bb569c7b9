// docker target: docker/trainrt.Dockerfile, the image the trainrt steps run (multi-stage: XGBoost
// built with CUDA and NCCL on the CUDA devel image, then the CUDA runtime image). The Dockerfile
// itself is data, stdlib/docker/trainrt.Dockerfile.in; this emitter decides whether the system
// needs it and fills in trainrt's version.
#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "base/embedded.h"
#include "emit/emitter.h"

// The image's version label is trainrt's version, which is trainc's (one meson project).
#ifndef TRAINC_VERSION
#error "emit_docker.cpp needs -DTRAINC_VERSION=\"x.y.z\" (cpp_args of trainc_lib in compiler/meson.build)"
#endif

namespace trainc {

namespace {

constexpr std::string_view kTemplate = "stdlib/docker/trainrt.Dockerfile.in";
constexpr std::string_view kVersionMark = "@TRAINRT_VERSION@";

std::string trainrt_dockerfile() {
  const EmbeddedFile* tmpl = find_embedded(kTemplate);
  if (tmpl == nullptr) throw std::logic_error(fmt::format("{} is not embedded (compiler/meson.build)", kTemplate));
  std::string text = fmt::format("# {}\n", kGeneratedNotice);
  std::string_view rest = tmpl->data;
  for (auto i = rest.find(kVersionMark); i != std::string_view::npos; i = rest.find(kVersionMark)) {
    text += rest.substr(0, i);
    text += TRAINC_VERSION;
    rest.remove_prefix(i + kVersionMark.size());
  }
  text += rest;
  return text;
}

class DockerEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "docker"; }
  void emit(const System& sys, const k8s::Plan&, OutputSink& out) const override {
    if (uses_trainrt(sys)) out.add("docker/trainrt.Dockerfile", trainrt_dockerfile());
  }
};

}  // namespace

/// Whether any step runs the trainrt image (datagen or xgboost).
bool uses_trainrt(const System& sys) {
  return std::any_of(sys.steps.begin(), sys.steps.end(), [](const Step& s) { return s.uses_trainrt(); });
}

std::unique_ptr<Emitter> new_docker_emitter() { return std::make_unique<DockerEmitter>(); }

}  // namespace trainc
