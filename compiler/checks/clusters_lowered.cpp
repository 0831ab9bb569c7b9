// A compute cluster's own settings: an image to run, pod groups whose sizes agree, and only the
// settings of its own engine.
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "base/data_path.h"
#include "base/overloaded.h"
#include "checks/checks.h"

namespace trainc {
namespace {

/// `lead`: the head or scheduler, which runs as one pod.
void check_group(const PodGroup& g, bool lead, const Document& doc, Diagnostics& diags) {
  if (const auto* replicas = written(doc, ptr_key(g.ptr, "replicas")); lead && replicas && *replicas != 1)
    doc.error(diags, ptr_key(g.ptr, "replicas"), fmt::format("the {} runs as one pod; remove 'replicas'", g.name));
  if (g.min > g.max)
    doc.error(diags, ptr_key(g.ptr, "min"), fmt::format("{}: min {} is above max {}", g.name, g.min, g.max),
              Anchor::value, {doc.note(ptr_key(g.ptr, "max"), "max set here")});
  else if (g.replicas < g.min || g.replicas > g.max)
    doc.error(diags, ptr_key(g.ptr, "replicas"),
              fmt::format("{}: replicas {} is outside min {} and max {}", g.name, g.replicas, g.min, g.max));
}

void check_cluster(const ComputeCluster& c, const Document& doc, Diagnostics& diags) {
  if (!written(doc, ptr_key(c.ptr, "build")) && !written(doc, ptr_key(c.ptr, "image")))
    doc.error(diags, c.ptr, fmt::format("cluster '{}' needs 'image' (or 'build')", c.name), Anchor::key);
  const std::string engine = c.kind();
  // The lead pod's key is the engine's own word; the other engine's word is a mistake.
  const PodGroup* lead = nullptr;
  std::string other_key;
  match(
      c.engine,
      [&](const Ray& r) {
        lead = &r.head;
        other_key = "scheduler";
      },
      [&](const Dask& d) {
        lead = &d.scheduler;
        other_key = "head";
      });
  if (written(doc, ptr_key(c.ptr, other_key)))
    doc.error(diags, ptr_key(c.ptr, other_key),
              fmt::format("{} clusters have a '{}', not a '{}'", engine, lead->name, other_key), Anchor::key);
  check_group(*lead, true, doc, diags);
  for (const auto& w : c.workers) check_group(w, false, doc, diags);
  auto only_for = [&](const char* key, std::string_view for_engine) {
    if (written(doc, ptr_key(c.ptr, key)) && engine != for_engine)
      doc.error(diags, ptr_key(c.ptr, key), fmt::format("'{}' applies to {} clusters only; remove it", key, for_engine),
                Anchor::key);
  };
  only_for("version", Ray::kName);
  only_for("perJob", Ray::kName);
  only_for("threads", Dask::kName);
  only_for("rmmPoolSize", Dask::kName);
  match(
      c.engine,
      [&](const Ray& r) {
        if (written(doc, ptr_key(c.ptr, "ttlAfterFinished")) && !r.per_job)
          doc.error(diags, ptr_key(c.ptr, "ttlAfterFinished"),
                    "'ttlAfterFinished' applies to per-job clusters only; set perJob: true or remove it", Anchor::key);
      },
      [&](const Dask&) {
        for (const auto& w : c.workers) {
          const bool min_written = written(doc, ptr_key(w.ptr, "min")) != nullptr;
          if (w.min != w.max || min_written)
            doc.error(diags, ptr_key(w.ptr, min_written ? "min" : "max"),
                      "dask workers do not autoscale here; set 'replicas' (and scale with kubectl scale)", Anchor::key);
        }
      });
}

}  // namespace

void check_cluster_settings(const System& sys, const Document& doc, Diagnostics& diags) {
  for (const auto& [name, c] : sys.clusters) check_cluster(c, doc, diags);
}

}  // namespace trainc
