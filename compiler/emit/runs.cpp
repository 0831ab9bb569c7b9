#include "emit/runs.h"

#include <map>
#include <set>
#include <string>

#include "base/sha256.h"
#include "emit/emitter.h"
#include "k8s/names.h"
#include "k8s/plan.h"

namespace trainc {
namespace {

/// Every container image `j` names (the "image" fields of its pod templates), in name order.
void collect_images(const nlohmann::ordered_json& j, std::set<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (k == "image" && v.is_string()) out.insert(v.get<std::string>());
      else collect_images(v, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) collect_images(v, out);
  }
}

}  // namespace

void name_runs(System& sys) {
  for (auto& step : sys.steps) step.run_id.clear();
  const k8s::Plan plan = k8s::plan(sys);  // with the steps' plain names: a run's name is no input of its hash
  // A compute cluster's size is no input either: a client step in pods of its own (Dask's) waits
  // for however many worker pods the cluster has, which its entry script names, but scaling the
  // cluster changes nothing it computes. Its objects are hashed as they are with one replica per
  // worker group. (A per-job cluster's size is part of its step's own object, and counts.)
  System unsized = sys;
  for (auto& [_, c] : unsized.clusters)
    if (c.steps_have_own_pods() && !c.per_job())
      for (auto& g : c.workers) g.replicas = g.min = g.max = 1;
  const k8s::Plan unsized_plan = k8s::plan(unsized);
  std::map<std::string, std::string, std::less<>> runs;
  // What a step needs enters its hash as the digest of the needed run, not its id: how an id is
  // made readable (k8s::run_id) is no change to the runs after it.
  std::map<std::string, std::string, std::less<>> digests;
  for (const k8s::Workload& w : plan.workloads) {  // in dependency order: what a step needs is named first
    const k8s::Workload* hashed = &w;
    if (!w.on.empty())
      for (const k8s::Workload& u : unsized_plan.workloads)
        if (u.name == w.name) hashed = &u;
    std::string text;
    for (const k8s::Object& obj : hashed->objects)
      text += k8s_object(hashed == &w ? sys : unsized, obj, hashed).dump() + "\n";
    // The runs it needs, as a set: reordering `needs` changes nothing it runs.
    std::set<std::string> needs(w.needs.begin(), w.needs.end());
    for (const auto& need : needs) text += "needs " + need + " " + digests[need] + "\n";
    // A step on a compute cluster runs its code in the cluster's pods too: their images decide its
    // work (the cluster's size does not).
    if (const k8s::Workload* on = w.on.empty() ? nullptr : plan.cluster(w.on)) {
      std::set<std::string> images;
      for (const k8s::Object& obj : on->objects) collect_images(k8s_object(sys, obj, on), images);
      for (const auto& image : images) text += "on " + w.on + " image " + image + "\n";
    }
    const std::string digest = sha256_hex(text);
    digests[w.name] = digest.substr(0, k8s::kHashLength);
    runs[w.name] = k8s::run_id(digest);
  }
  for (auto& step : sys.steps)
    if (auto it = runs.find(step.name); it != runs.end()) step.run_id = it->second;
}

}  // namespace trainc
