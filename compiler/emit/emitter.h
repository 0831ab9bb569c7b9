#pragma once
// One emitter per target; all registered in one table (registry.cpp).
#include <memory>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "k8s/plan.h"
#include "base/output_sink.h"
#include "k8s/rollout.h"
#include "inspect/graph.h"
#include "inspect/plan.h"
#include "model/model.h"

namespace trainc {

/// What several emitters need, computed once per compile (driver.cpp) and handed to each: the
/// Kubernetes plan, the rollout made from it, the resource plan (`trainc plan`) and the graph.
struct Planned : k8s::Plan {
  Planned(const System& sys, k8s::Plan plan);
  Planned(const Planned&) = delete;  // the rollout points into the plan
  Planned& operator=(const Planned&) = delete;
  Rollout rollout;
  ResourcePlan resources;
  GraphShape graph_shape;
  std::string graph;  ///< the system's picture in DOT (graph_dot)
};

class Emitter {
 public:
  virtual ~Emitter() = default;
  /// The target's name, e.g. "k8s"; unique in the registry.
  virtual std::string_view name() const = 0;
  /// Adds the target's files to `out`. What the system becomes in Kubernetes, and the order it
  /// goes up and comes down in, come from `plan`; no emitter reads another's output, except that
  /// the runbook, registered last, lists the paths of the files in `out`.
  virtual void emit(const System& sys, const Planned& plan, OutputSink& out) const = 0;
  /// The same, planning from `plan` (for tests of one emitter).
  void emit(const System& sys, const k8s::Plan& plan, OutputSink& out) const { emit(sys, Planned(sys, plan), out); }
};

std::unique_ptr<Emitter> new_ci_emitter();
std::unique_ptr<Emitter> new_docker_emitter();
std::unique_ptr<Emitter> new_graph_emitter();
std::unique_ptr<Emitter> new_k8s_emitter();
std::unique_ptr<Emitter> new_model_emitter();
std::unique_ptr<Emitter> new_runbook_emitter();
std::unique_ptr<Emitter> new_scripts_emitter();
std::unique_ptr<Emitter> new_terraform_emitter();
/// One object of the plan as the k8s emitter builds it (emit_k8s.cpp); `w` is the workload it
/// belongs to, nullptr for a shared object.
nlohmann::ordered_json k8s_object(const System& sys, const k8s::Object& obj, const k8s::Workload* w);
/// Whether the system runs trainrt steps, and so needs docker/trainrt.Dockerfile (emit_docker.cpp).
bool uses_trainrt(const System& sys);

/// A Google API the system's cloud resources use, e.g. container.googleapis.com.
struct GcpApi {
  std::string_view service;
  std::string_view why;
};
/// The APIs a system with `gcp` uses, in name order: Terraform (apis.tf), up.sh and the runbook
/// enable and list the same ones (emit_terraform.cpp).
std::vector<GcpApi> gcp_apis(const System& sys);

/// Every emitter, in the order they run. Registering two with one name aborts at startup.
const std::vector<std::unique_ptr<Emitter>>& emitters();

}  // namespace trainc
