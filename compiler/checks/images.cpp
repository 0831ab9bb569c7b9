// What the images hold, judged before apply from their facts (stdlib/images.yaml): the tools the
// pod's entry script calls, kernels for the pool's GPUs and a driver the pool can give. An image no
// family matches is unknown and not judged here; its pod's preflight checks it in the pod.
#include <set>
#include <utility>

#include <fmt/format.h>

#include "base/data_path.h"
#include "base/embedded.h"
#include "checks/checks.h"
#include "model/images.h"

namespace trainc {
namespace {

/// One container image as a workload runs it: where the spec names it, and on which GPUs.
struct ImageUse {
  std::string what;   ///< "step 'train'"
  std::string ptr;    ///< the workload
  std::string image;
  const Pool* pool = nullptr;
  int gpus = 0;
  std::vector<std::pair<std::string, std::string>> tools;  ///< program, why the pod calls it
};

/// Where to point: the image the spec wrote, else the workload itself (a default image).
std::string image_ptr(const Document& doc, const std::string& ptr) {
  const std::string p = ptr_key(ptr, "image");
  return written(doc, p) ? p : ptr;
}

/// What to do when the image has no kernels for compute capability `cc`.
std::string kernels_fix(const ImageFacts& f, int cc) {
  const std::string other = image_book().with_kernels_for(f, cc);
  if (!other.empty()) return fmt::format("use a build with sm_{} kernels, such as {}, or newer", cc, other);
  return fmt::format("use a build of {} with sm_{} kernels (a newer CUDA build of the same image)", f.repository, cc);
}

/// The image the trainrt Dockerfile (stdlib/docker/trainrt.Dockerfile.in) runs on: its last FROM.
std::string trainrt_base_image() {
  const auto* f = find_embedded("stdlib/docker/trainrt.Dockerfile.in");
  if (!f) return "";
  std::string base;
  std::string_view text = f->data;
  for (size_t at = text.find("\nFROM "); at != std::string_view::npos; at = text.find("\nFROM ", at + 1)) {
    const size_t start = at + 6, end = text.find_first_of(" \n", start);
    base = std::string(text.substr(start, end - start));
  }
  return base;
}

/// The image a workload's pods run, as far as its facts go: an image trainc builds from `base` is
/// its base's, unless a requirements file may have added tools or replaced its libraries.
std::optional<ImageFacts> facts_of(const System& sys, const std::string& image, std::string* shown) {
  *shown = "'" + image + "'";
  if (!image.empty() && image == sys.runtime_image) {
    // The trainrt image: its Dockerfile's last FROM, with trainrt's user and binary.
    const std::string base = trainrt_base_image();
    std::optional<ImageFacts> f = image_book().facts(base);
    if (!f) return std::nullopt;
    *shown = fmt::format("'{}' (trainrt, built FROM {})", image, base);
    f->family = "trainrt";
    f->uid = 10001;
    f->users[10001] = "/workspace";
    f->tools.insert("trainrt");
    return f;
  }
  for (const auto& [_, b] : sys.builds) {
    if (b.image != image) continue;
    if (!b.generated() || !b.requirements.empty()) return std::nullopt;
    *shown = fmt::format("'{}' (built FROM {})", image, b.base);
    return image_book().facts(b.base);
  }
  return image_book().facts(image);
}

/// Images already warned of, with their pool: one driver warning each.
using Warned = std::set<std::pair<std::string, std::string>>;

void judge(const System& sys, const ImageUse& u, const Document& doc, Diagnostics& diags, Warned& warned) {
  if (const std::string why = image_reference_bounds_error(u.image); !u.image.empty() && !why.empty()) {
    const bool runtime = u.image == sys.runtime_image && written(doc, "/runtime/image");
    if (warned.emplace(u.image, "").second)
      doc.error(diags, runtime ? std::string("/runtime/image") : image_ptr(doc, u.ptr),
                fmt::format("{} names image '{}', which a registry would not take: {}", u.what,
                            u.image.size() > 200 ? u.image.substr(0, 200) + "..." : u.image, why));
    return;
  }
  std::string image;
  const std::optional<ImageFacts> f = facts_of(sys, u.image, &image);
  if (!f) return;
  const bool runtime = !u.image.empty() && u.image == sys.runtime_image && written(doc, "/runtime/image");
  const std::string at = runtime ? std::string("/runtime/image") : image_ptr(doc, u.ptr);
  for (const auto& [tool, why] : u.tools) {
    if (!f->lacks.count(tool)) continue;
    doc.error(diags, at,
              fmt::format("{} runs image {}, which has no `{}` (stdlib/images.yaml, {} family), yet {} calls "
                          "it: the pod would exit 127 in its first minute. Use an image that has `{}`{}",
                          u.what, image, tool, f->family, why, tool,
                          tool == "aws" || tool == "python3" || tool == "python"
                              ? ", or `build: {base: ..., requirements: ...}` FROM one that has it"
                              : ""));
  }
  if (!u.pool || !u.pool->accelerator || u.gpus <= 0) return;
  const std::optional<int> cc = image_book().compute_capability(u.pool->accelerator->type);
  if (!cc) return;
  if (std::optional<bool> runs = f->runs_on(*cc); runs && !*runs)
    doc.error(diags, at,
              fmt::format("{} runs image {} on pool '{}' ({} GPUs, sm_{}), but the image has GPU kernels only "
                          "for {} (CUDA {}): every kernel launch would fail with 'no kernel image is available for "
                          "execution on the device': {}",
                          u.what, image, u.pool->name, u.pool->accelerator->type, *cc, f->arch_list(), f->cuda,
                          kernels_fix(*f, *cc)));
  const std::string& latest = image_book().gke_latest_driver();
  if (!f->min_driver.empty() && !latest.empty() && compare_driver(f->min_driver, latest) > 0 &&
      warned.emplace(u.image, u.pool->name).second) {
    const std::string older = image_book().runs_on_driver(*f, latest);
    doc.warning(diags, at,
                fmt::format("{} runs image {}, a CUDA {} build that needs NVIDIA driver {} or newer; pool '{}' "
                            "asks GKE for its LATEST driver, which the newest source trainc has maps to {}. On "
                            "an older driver the pod fails at its first CUDA call (cudaErrorInsufficientDriver): "
                            "run a GKE version whose LATEST driver is {} or newer, or {}",
                            u.what, image, f->cuda, f->min_driver, u.pool->name, latest, f->min_driver,
                            older.empty() ? "use a build of the image for an older CUDA"
                                          : fmt::format("use its build for an older CUDA, {}", older)));
  }
}

}  // namespace

void check_images(const System& sys, const Document& doc, Diagnostics& diags) {
  Warned warned;
  for (const auto& st : sys.steps) {
    const ComputeCluster* c = sys.compute_cluster(st.cluster);
    if (c && !c->steps_have_own_pods()) continue;  // runs in the cluster's pods: judged with the cluster
    ImageUse u{fmt::format("step '{}'", st.name), st.ptr, st.image, sys.pool(st.pool), st.gpus, {}};
    // The S3 syncs' AWS CLI comes with the pod when the image may lack it (injected_tools).
    if ((!st.inputs.empty() || st.outputs) && injected_tools(sys, st).empty())
      u.tools.emplace_back("aws", "its entry script's S3 sync of inputs and outputs");
    if (const std::string p = st.program(); !p.empty() && p.find('/') == std::string::npos)
      u.tools.emplace_back(p, "the step's command");
    if (c) u.tools.emplace_back("python3", "its wait for the Dask workers");
    judge(sys, u, doc, diags, warned);
  }
  for (const auto& [_, c] : sys.clusters) {
    judge(sys, {fmt::format("cluster '{}'", c.name), c.ptr, c.image, sys.pool(c.lead().pool), c.lead().gpus, {}}, doc, diags, warned);
    for (const auto& g : c.workers)
      judge(sys, {fmt::format("cluster '{}' workers '{}'", c.name, g.name), c.ptr, c.image, sys.pool(g.pool), g.gpus, {}},
            doc, diags, warned);
  }
  for (const auto& [_, s] : sys.services)
    // A service without `image` runs its server kind's pinned one: point at the kind.
    judge(sys, {fmt::format("service '{}'", s.name), written(doc, ptr_key(s.ptr, "image")) ? s.ptr : ptr_key(s.ptr, s.kind()), s.image, sys.pool(s.pool), s.gpus, {}}, doc, diags, warned);
}

}  // namespace trainc
