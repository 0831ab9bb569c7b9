// docker target: docker/trainrt.Dockerfile, the image the trainrt steps run (multi-stage: XGBoost
// built with CUDA and NCCL on the CUDA devel image, then the CUDA runtime image), and
// docker/<name>.Dockerfile for each workload whose `build` names a `base`. The Dockerfiles
// themselves are data, stdlib/docker/*.Dockerfile.in; this emitter decides which the system needs
// and fills them in.
#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/embedded.h"
#include "emit/ci.h"
#include "emit/emitter.h"
#include "quoting/shell.h"
#include "model/build_context.h"

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

/// `text` with every `@MARK@` of `marks` replaced; a mark left unfilled is a bug in this emitter.
/// Marks whose value spans several lines: whole instructions trainc writes (each path in them a
/// JSON string, whose line breaks are escapes).
bool multi_line_mark(std::string_view mark) { return mark == "@REQUIREMENTS@" || mark == "@COPY@"; }

std::string fill(std::string_view text, const std::vector<std::pair<std::string_view, std::string>>& marks) {
  std::string out(text);
  // A Dockerfile instruction ends at a line break: a value holding one would add instructions
  // (lowering refuses control characters in every path; this is the last guard).
  for (const auto& [mark, value] : marks)
    if (!multi_line_mark(mark) && value.find_first_of("\r\n") != std::string::npos)
      throw std::logic_error(fmt::format("a Dockerfile value for {} holds a line break: {}", mark, value));
  for (const auto& [mark, value] : marks)
    for (auto i = out.find(mark); i != std::string::npos; i = out.find(mark, i + value.size()))
      out.replace(i, mark.size(), value);
  if (out.find("@NAME@") != std::string::npos || out.find("@COPY@") != std::string::npos)
    throw std::logic_error("image Dockerfile template mark left unfilled");
  return out;
}

/// A JSON string: the exec form of COPY takes paths as JSON, so no path is ever split or expanded
/// by a shell.
std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

/// docker/<name>.Dockerfile of a build with `base`: stdlib/docker/image.Dockerfile.in filled in.
/// Requirements are installed when the image is built; each `copy` path lands at the same path
/// under the workdir; the image runs as uid 1000.
std::string image_dockerfile(const System& sys, const Build& b) {
  const EmbeddedFile* tmpl = find_embedded(kImageDockerfileTemplate);
  if (tmpl == nullptr) throw std::logic_error(fmt::format("{} is not embedded (compiler/meson.build)", kImageDockerfileTemplate));
  std::string requirements;
  if (!b.requirements.empty())
    requirements = fmt::format("COPY [{}, \"/tmp/requirements.txt\"]\n"
                               "RUN python3 -m pip install --no-cache-dir -r /tmp/requirements.txt && rm /tmp/requirements.txt\n",
                               json_string(b.requirements));
  std::string copy;
  for (const auto& c : b.copy) {
    const std::string rel = std::filesystem::path(c).lexically_normal().generic_string();
    copy += fmt::format("COPY --chown=1000:1000 [{}, {}]\n", json_string(c),
                        json_string((std::filesystem::path(b.workdir) / rel).generic_string()));
  }
  std::vector<std::string> dirs{b.workdir};
  dirs.insert(dirs.end(), b.writable.begin(), b.writable.end());
  const CiPaths paths = ci_paths(sys);
  // The comment's example passes the context as docker build's operand: a folder named like an
  // option (-q) is written ./-q.
  std::string context = paths.context(b);
  if (context.starts_with('-')) context = "./" + context;
  return fmt::format("# {}\n", kGeneratedNotice) +
         fill(tmpl->data, {{"@NAME@", fmt::format("{} '{}'", b.of, b.name)},
                           {"@BASE@", b.base},
                           {"@DIRS@", sh_join(dirs)},
                           {"@WORKDIR@", b.workdir},
                           {"@CONTEXT@", context},
                           {"@DOCKERFILE@", paths.dockerfile(b)},
                           {"@IMAGE@", b.image},
                           {"@REQUIREMENTS@", requirements},
                           {"@COPY@", copy}});
}

class DockerEmitter final : public Emitter {
 public:
  std::string_view name() const override { return "docker"; }
  void emit(const System& sys, const Planned&, OutputSink& out) const override {
    if (uses_trainrt(sys)) out.add("docker/trainrt.Dockerfile", trainrt_dockerfile());
    for (const auto& [_, b] : sys.builds)
      if (b.generated()) out.add(b.output_dockerfile(), image_dockerfile(sys, b));
  }
};

}  // namespace

/// Whether any step runs the trainrt image (datagen or xgboost).
bool uses_trainrt(const System& sys) {
  return std::any_of(sys.steps.begin(), sys.steps.end(), [](const Step& s) { return s.uses_trainrt(); });
}

std::unique_ptr<Emitter> new_docker_emitter() { return std::make_unique<DockerEmitter>(); }

}  // namespace trainc
