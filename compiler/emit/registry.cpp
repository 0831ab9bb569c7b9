#include <set>
#include <stdexcept>
#include <string>

#include "emit/emitter.h"

namespace trainc {

Planned::Planned(const System& sys, k8s::Plan plan)
    : k8s::Plan(std::move(plan)), rollout(make_rollout(sys, *this)), resources(make_plan(sys)),
      graph(graph_dot(sys, &graph_shape)) {}

const std::vector<std::unique_ptr<Emitter>>& emitters() {
  static const std::vector<std::unique_ptr<Emitter>> all = [] {
    std::vector<std::unique_ptr<Emitter>> v;
    v.push_back(new_k8s_emitter());
    v.push_back(new_terraform_emitter());
    v.push_back(new_scripts_emitter());
    v.push_back(new_docker_emitter());
    v.push_back(new_model_emitter());
    v.push_back(new_ci_emitter());
    v.push_back(new_graph_emitter());
    v.push_back(new_runbook_emitter());  // last: it describes what the others wrote
    std::set<std::string, std::less<>> names;
    for (const auto& e : v)
      if (!names.emplace(e->name()).second) throw std::logic_error("emitter registered twice: " + std::string(e->name()));
    return v;
  }();
  return all;
}

}  // namespace trainc
