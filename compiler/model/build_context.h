#pragma once
// What an image build reads, digested: the tag of a built image is c-<16 hex digits of SHA-256>
// over the build's settings, its Dockerfile and every file the build copies, so compiled
// manifests change exactly when the image does. Lowering reads files other than the spec only
// here and in lower_sources.cpp (a folder a server's store is filled from).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "frontend/document.h"
#include "model/model.h"

namespace trainc {

/// The text generated Dockerfiles are made from (embedded from stdlib/).
inline constexpr std::string_view kImageDockerfileTemplate = "stdlib/docker/image.Dockerfile.in";

/// Limits on what a context digest reads; past them the user names a tag instead.
inline constexpr size_t kMaxContextFiles = 20000;
inline constexpr unsigned long long kMaxContextBytes = 1ull << 30;

/// A problem with one input of the build, with the JSON pointer of the spec key it concerns.
struct BuildInputError {
  std::string ptr, message;
};

/// The tag for `build`, whose context is `spec_dir / build.context`. `template_text` is the text
/// the generated Dockerfile is made from ("" for the user's Dockerfile). Paths the build names
/// (context, dockerfile, requirements, copy) must stay inside the spec's folder and exist; a
/// problem is returned instead of a tag.
std::variant<std::string, BuildInputError> build_tag(const std::filesystem::path& spec_dir, const Build& build,
                                                     std::string_view template_text);

/// The image the user's Dockerfile (`build.dockerfile`, not generated) builds its final stage
/// FROM, with the ARG defaults before its first FROM put in and a stage's name followed back to
/// its image. `path` is the Dockerfile as the spec's folder sees it; `problem` says why the image
/// cannot be told ("" when the file is missing, which build_tag reports).
struct DockerfileBase {
  std::string image, path, problem;
};
DockerfileBase dockerfile_base(const std::filesystem::path& spec_dir, const Build& build);

/// Digests every build (checking its files even when the spec names the tag), then gives each
/// workload that builds, and each client step of a cluster that builds, the image's reference.
void finish_builds(System& sys, const Document& doc, Diagnostics& diags);

/// Whether `rel` (a path as written in the spec) stays inside its base folder: relative, and no
/// `..` that climbs out.
bool stays_inside(const std::string& rel);

}  // namespace trainc
