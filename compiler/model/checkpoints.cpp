#include "model/checkpoints.h"

#include <filesystem>

namespace trainc {

bool path_within(std::string_view inner, std::string_view outer) {
  if (inner == outer || outer == "/") return true;
  if (outer.ends_with('/')) outer.remove_suffix(1);
  return inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '/';
}

const Mount* checkpoint_mount(const Step& step) {
  if (!step.checkpoints) return nullptr;
  const Mount* found = nullptr;
  for (const auto& m : step.mounts)
    if (!m.read_only && path_within(step.checkpoints->path, m.path)) found = &m;
  return found;
}

std::optional<std::string> checkpoints_in_outputs(const Step& step) {
  if (!step.checkpoints || !step.outputs || checkpoint_mount(step)) return std::nullopt;
  if (!path_within(step.checkpoints->path, step.outputs->path)) return std::nullopt;
  const std::string rel =
      std::filesystem::path(step.checkpoints->path).lexically_relative(step.outputs->path).generic_string();
  return rel == "." ? "" : rel;
}

bool runs_keep_apart(const Step& step) { return step.checkpoints && !step.checkpoints->resume_previous; }

}  // namespace trainc
