#include "model/lowerer.h"

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "model/build_context.h"

namespace trainc::lowering {

std::string Lowerer::built_image(const System& sys, const json& w, const std::string& wptr, const std::string& name,
                                 const std::string& of, const std::string& workdir) {
  const json& bj = w["build"];
  const std::string ptr = ptr_key(wptr, "build");
  if (w.contains("image")) {
    doc_.error(diags_, ptr,
               fmt::format("{} '{}' names both 'image' and 'build'; keep 'build' to have trainc's CI build the image, "
                           "or 'image' for one built elsewhere",
                           of, name),
               Anchor::key, {doc_.note(ptr_key(wptr, "image"), "the image is named here", Anchor::key)});
    return "";
  }
  Build b;
  b.name = name;
  b.of = of;
  b.ptr = ptr;
  b.workdir = workdir;
  b.context = get_or<std::string>(bj, "context", ".");
  b.dockerfile = get_or<std::string>(bj, "dockerfile", "");
  b.base = get_or<std::string>(bj, "base", "");
  b.requirements = get_or<std::string>(bj, "requirements", "");
  if (bj.contains("copy")) b.copy = bj["copy"].get<std::vector<std::string>>();
  const size_t errors = diags_.error_count();
  if (b.dockerfile.empty() == b.base.empty())
    doc_.error(diags_, ptr,
               b.base.empty() ? "'build' needs 'dockerfile' (your Dockerfile in the context) or 'base' (the image "
                                "trainc's generated Dockerfile starts from)"
                              : "'build' takes 'dockerfile' or 'base', not both: 'base' makes trainc write the "
                                "Dockerfile, 'dockerfile' uses yours",
               Anchor::key);
  if (!b.dockerfile.empty())
    for (const char* key : {"requirements", "copy"})
      if (bj.contains(key))
        doc_.error(diags_, ptr_key(ptr, key),
                   fmt::format("'{}' is for Dockerfiles trainc writes (with 'base'); with 'dockerfile' your "
                               "Dockerfile copies and installs what it needs",
                               key),
                   Anchor::key);
  if (!b.base.empty()) {
    const std::string last = b.base.substr(b.base.rfind('/') == std::string::npos ? 0 : b.base.rfind('/') + 1);
    if (b.base.find('@') == std::string::npos && (last.find(':') == std::string::npos || last.ends_with(":latest")))
      doc_.error(diags_, ptr_key(ptr, "base"),
                 fmt::format("base image '{}' is not pinned: name a version tag or digest (e.g. "
                             "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime), so a rebuild gives the same image",
                             b.base));
  }
  auto inside = [&](const std::string& rel, const std::string& at, std::string_view folder) {
    if (!stays_inside(rel))
      doc_.error(diags_, at, fmt::format("'{}' leaves {}: paths here are relative and stay inside it", rel, folder));
  };
  inside(b.context, ptr_key(ptr, "context"), "the spec's folder");
  if (!b.dockerfile.empty()) inside(b.dockerfile, ptr_key(ptr, "dockerfile"), "the build context");
  if (!b.requirements.empty()) inside(b.requirements, ptr_key(ptr, "requirements"), "the build context");
  for (size_t i = 0; i < b.copy.size(); ++i) inside(b.copy[i], ptr_index(ptr_key(ptr, "copy"), i), "the build context");
  b.context = std::filesystem::path(b.context).lexically_normal().generic_string();
  if (b.context.empty()) b.context = ".";
  if (b.context.size() > 1 && b.context.back() == '/') b.context.pop_back();
  if (!sys.gcp) {
    doc_.error(diags_, ptr,
               fmt::format("{} '{}' builds its image, which is pushed to Artifact Registry: add 'gcp' (project and "
                           "region), or name a prebuilt 'image'",
                           of, name),
               Anchor::key);
  }
  if (auto it = builds_.find(name); it != builds_.end()) {
    doc_.error(diags_, ptr,
               fmt::format("the {} '{}' and the {} '{}' both build an image named '{}'; images are named after "
                           "their workload, so rename one",
                           it->second.of, name, of, name, name),
               Anchor::key, {doc_.note(it->second.ptr, "the other build", Anchor::key)});
  }
  if (diags_.error_count() > errors) return "";
  if (bj.contains("tag")) b.tag = bj["tag"];
  // The tag and the reference come last (finish_builds): a step's build also digests the
  // folders it writes, known only once the whole step is lowered.
  builds_.emplace(name, std::move(b));
  return "";
}

}  // namespace trainc::lowering
