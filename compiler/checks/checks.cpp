#include "checks/checks.h"

#include <algorithm>

#include "model/placement.h"

namespace trainc {

void check_lowered(const System& sys, const Document& doc, Diagnostics& diags) {
  check_system_settings(sys, doc, diags);
  check_cluster_settings(sys, doc, diags);
  check_service_settings(sys, doc, diags);
  check_step_settings(sys, doc, diags);
  // The steps an error above leaves out of run_checks, and those that need them, get their
  // security judged here; the rest get it there, beside their other checks.
  std::set<std::string> left_out;
  for (const auto& st : sys.steps)
    for (const auto& d : diags.reported())
      if (d.severity == Severity::error && (d.path == st.ptr || d.path.starts_with(st.ptr + "/"))) left_out.insert(st.name);
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& st : sys.steps)
      if (!left_out.count(st.name) &&
          std::any_of(st.needs.begin(), st.needs.end(), [&](const std::string& n) { return left_out.count(n) > 0; }))
        grew = left_out.insert(st.name).second;
  }
  check_step_security(sys, doc, diags, &left_out);
}

bool run_checks(const System& sys, const Document& doc, Diagnostics& diags, const CheckOptions& opts, bool* whole) {
  size_t before = diags.error_count();
  check_pools(sys, doc, diags);
  check_capacity(sys, doc, diags);
  check_names(sys, doc, diags);
  check_steps(sys, doc, diags);
  check_checkpoints(sys, doc, diags);
  check_clusters(sys, doc, diags);
  check_services(sys, doc, diags);
  check_resources(sys, doc, diags);
  check_images(sys, doc, diags);
  check_operators(sys, doc, diags);
  check_security(sys, doc, diags);
  check_secrets(sys, doc, diags, opts);
  if (whole) *whole = !diags.has_errors();
  check_topology_settings(sys, doc, diags);
  // On a system the families above passed: it builds the output's plan.
  if (!diags.has_errors()) check_object_names(sys, doc, diags);
  // Where the pods land is judged on a system whose parts are right, with one packing of them.
  if (!diags.has_errors()) {
    const Placement placed = place(sys);
    check_topology(sys, placed, doc, diags);
    if (!diags.has_errors()) check_placement(sys, placed, doc, diags);
  }
  return diags.error_count() == before;
}

const nlohmann::json* written(const Document& doc, const std::string& ptr) {
  const nlohmann::json::json_pointer at(ptr);
  return doc.root.contains(at) ? &doc.root.at(at) : nullptr;
}

}  // namespace trainc
