// The runbook's "Change and re-run" section: what an edit of the spec does when the output is
// applied again, from the rules `trainc plan --against` applies (k8s/update_rules.h).
#include <fmt/format.h>

#include <set>

#include "emit/runbook.h"
#include "k8s/update_rules.h"

namespace trainc {
namespace {

std::string group_of(const std::string& api_version) {
  const size_t slash = api_version.find('/');
  return slash == std::string::npos ? "" : api_version.substr(0, slash);
}

/// "/spec/clusterIPs/0" as a reader writes it: "spec.clusterIPs[0]".
std::string dotted(const std::string& pointer) {
  std::string out;
  size_t i = 1;
  while (i <= pointer.size()) {
    size_t j = pointer.find('/', i);
    if (j == std::string::npos) j = pointer.size();
    std::string seg = pointer.substr(i, j - i);
    if (!seg.empty() && seg.find_first_not_of("0123456789") == std::string::npos)
      out += "[" + seg + "]";
    else
      out += (out.empty() ? "" : ".") + seg;
    i = j + 1;
  }
  return out;
}

/// Each step and the steps that run again when it changes: itself and every step that needs it,
/// directly or through others.
std::string steps_table(const System& sys) {
  std::string md = "| if you change step | these steps run again |\n|---|---|\n";
  for (size_t i = 0; i < sys.steps.size(); ++i) {
    std::set<std::string> again{sys.steps[i].name};
    std::vector<std::string> order{"`" + sys.steps[i].name + "`"};
    for (size_t j = i + 1; j < sys.steps.size(); ++j)  // steps are in dependency order
      for (const auto& need : sys.steps[j].needs)
        if (again.count(need)) {
          again.insert(sys.steps[j].name);
          order.push_back("`" + sys.steps[j].name + "`");
          break;
        }
    md += fmt::format("| `{}` | {} |\n", sys.steps[i].name, fmt::join(order, ", "));
  }
  return md + "\n";
}

}  // namespace

std::string change_runbook_section(const System& sys, const k8s::Plan& plan) {
  const k8s::UpdateRules& rules = k8s::update_rules();
  std::string md = "## Change and re-run\n\n";
  md += "Edit the spec, compile it again and apply the new output as above. To see first what that will do, per "
        "object (created, updated in place, rolled, replaced, removed), per pool (resized or replaced) and which "
        "steps run again with their accelerator-hours, compare it with this folder";
  // The spec is named by a placeholder: twin specs (YAML and Jsonnet) compile to the same folder.
  const std::string folder = sys.origin.outside_repository.empty() && !sys.origin.out.empty()
                                 ? fmt::format("{}/{}", sys.origin.out, sys.name)
                                 : fmt::format("OUT/{}", sys.name);
  if (!folder.starts_with("OUT/")) md += ", from the repository root";
  md += fmt::format(" (SPEC is the spec file, as the `source:` line of `.trainc-manifest` names it{}):\n\n```sh\n"
                    "trainc plan SPEC --against {}\n```\n\n",
                    folder.starts_with("OUT/") ? "; OUT the folder given to `trainc compile -o`" : "", folder);
  if (!sys.steps.empty()) {
    md += "A step's run is named by what it runs and by the runs of the steps it needs, so applying the same "
          "output again starts nothing, and a change re-runs the changed step and every step after it:\n\n";
    md += steps_table(sys);
  }
  std::vector<std::string> rolled, kept;
  std::map<std::string, std::set<std::string>> fixed;  // kind -> immutable fields
  for (const k8s::Object* o : plan.apply_order()) {
    const std::string group = group_of(o->api_version);
    if (rules.rolls(group, o->kind)) {
      const std::string caveat = rules.roll_caveat(group, o->kind);
      (caveat.empty() ? rolled : kept).push_back(
          fmt::format("`{} {}` ({}){}", o->kind, o->name, o->what, caveat.empty() ? "" : ": " + caveat));
    }
    if (o->kind == "Job" || o->kind == "JobSet" || o->kind == "RayJob" || o->kind == "ConfigMap") continue;
    for (const auto& [path, source] : rules.immutable_fields(group, o->kind)) fixed[o->kind].insert(dotted(path));
  }
  if (!rolled.empty()) {
    md += "A change to the pods of these restarts them in place (a roll), with no step run again:\n\n";
    for (const auto& r : rolled) md += "- " + r + "\n";
    md += "\n";
  }
  if (!kept.empty()) {
    md += "A change to the pods of these leaves the running pods as they are:\n\n";
    for (const auto& r : kept) md += "- " + r + "\n";
    md += "\n";
  }
  const k8s::PoolRules& pools = rules.pools();
  std::vector<std::string> replace, resize;
  for (const auto& f : pools.replace) replace.push_back("`" + f + "`");
  for (const auto& f : pools.resize) resize.push_back("`" + f + "`");
  if (!sys.pools.empty())
    md += fmt::format("What cannot change in place: a pool's {} (as `model.yaml` shows them): {}. Its {} resize "
                      "it in place.",
                      fmt::join(replace, ", "), pools.lost, fmt::join(resize, " and "));
  if (!fixed.empty()) {
    std::vector<std::string> kinds;
    for (const auto& [kind, fields] : fixed) {
      std::vector<std::string> quoted;
      for (const auto& f : fields) quoted.push_back("`" + f + "`");
      kinds.push_back(fmt::format("{} {}", kind, fmt::join(quoted, ", ")));
    }
    md += fmt::format("{}The API server refuses a change to {}: no edit of the spec changes them, and `plan --against` "
                      "calls any change to them a replace.",
                      sys.pools.empty() ? "" : " ", fmt::join(kinds, "; "));
  }
  return md + "\n\n";
}

}  // namespace trainc
