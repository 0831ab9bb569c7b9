#include "emit/k8s_plan.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <fmt/format.h>

#include "base/overloaded.h"
#include "emit/entry_script.h"
#include "emit/k8s_names.h"

namespace trainc::k8s {
namespace {

std::string step_file(const Step& step, std::string_view what) { return fmt::format("k8s/{}-{}.yaml", step.name, what); }

/// A step that runs to completion in pods: entry-script ConfigMap, a headless Service when its
/// pods must find each other, and the Job.
void batch_step(const System& sys, const Step& step, Workload& w) {
  w.entry_script = entry_script(sys, step);
  w.objects.push_back({Role::kEntryScript, "v1", "ConfigMap", configmap_name(sys, step, w.entry_script),
                       step_file(step, "configmap"), fmt::format("entry script of step '{}'", step.name)});
  if (step.distributed())
    w.objects.push_back({Role::kRendezvous, "v1", "Service", job_name(sys, step), step_file(step, "service"),
                         fmt::format("rendezvous service of step '{}'", step.name)});
  w.objects.push_back({Role::kBatchJob, "batch/v1", "Job", job_name(sys, step), step_file(step, "job"),
                       fmt::format("step '{}'", step.name), Ready::kJobComplete});
}

}  // namespace

const Object& Workload::done() const {
  for (const auto& o : objects)
    if (o.ready != Ready::kApplied) return o;
  throw std::logic_error("workload '" + name + "' has no object that says when it is done");
}

const Workload* Plan::workload(std::string_view name) const {
  for (const auto& w : workloads)
    if (w.name == name) return &w;
  return nullptr;
}

std::vector<const Object*> Plan::apply_order() const {
  std::vector<const Object*> out;
  for (const auto& o : shared) out.push_back(&o);
  for (const auto& w : workloads)
    for (const auto& o : w.objects) out.push_back(&o);
  return out;
}

std::vector<const Object*> Plan::teardown_order() const {
  auto out = apply_order();
  std::reverse(out.begin(), out.end());
  return out;
}

const Object* Plan::object_in(std::string_view file) const {
  for (const Object* o : apply_order())
    if (o->file == file) return o;
  return nullptr;
}

Plan plan(const System& sys) {
  Plan p;
  if (sys.owns_namespace)
    p.shared.push_back({Role::kNamespace, "v1", "Namespace", sys.ns, std::string(kNamespaceFile), "namespace"});
  if (sys.identity && sys.gcp)
    p.shared.push_back({Role::kServiceAccount, "v1", "ServiceAccount", sys.identity->ksa,
                        std::string(kServiceAccountFile), "Workload Identity service account"});
  for (const auto& step : sys.steps) {
    Workload w;
    w.step = &step;
    w.name = step.name;
    w.needs = step.needs;
    // Where a new kind of step becomes other objects (a RayJob, a JobSet), it says so here.
    match(
        step.run, [&](const Torchrun&) { batch_step(sys, step, w); }, [&](const Command&) { batch_step(sys, step, w); },
        [&](const Datagen&) { batch_step(sys, step, w); }, [&](const XGBoost&) { batch_step(sys, step, w); });
    p.workloads.push_back(std::move(w));
  }
  return p;
}

std::string_view wait_condition(Ready ready) {
  switch (ready) {
    case Ready::kApplied: return "";
    case Ready::kJobComplete: return "condition=complete";
  }
  return "";
}

std::string kubectl_ref(const Object& o) {
  std::string kind = o.kind;
  std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char c) { return std::tolower(c); });
  return kind + "/" + o.name;
}

}  // namespace trainc::k8s
